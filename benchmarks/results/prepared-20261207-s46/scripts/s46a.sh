#!/usr/bin/env bash
# Session 46, call a: what session 45 prepared as its call c and never ran (wgmma's own rate, and
# rs2s, the RS wgmma product with W's tile 128-byte swizzled) and mbar (mbar.patch, branch issue21-streamed-mbar:
# main's mma.sync product with a full and an empty mbarrier a stage instead of a block barrier a
# chunk), both against main at 256x512x1024 in bf16 and fp16. Predicted: rs2s's product 4-6k
# cycles a step and its forward ~500-550 us if the unswizzled layout held rs2 back, ~12k if not;
# mbar's forward 600-680 us against main's ~735 if the warps, free of the chunks' barriers, drift
# so that one's ldmatrix runs under another's mma's, ~735 if they stay in step.
# check_streamed gates each (every streamed error below 1e-2).
# QUICK=1 (a call with ~3 minutes of device time left): one round at bf16, no probe, no tests.
set -uo pipefail
export PYTHONUNBUFFERED=1
QUICK=${QUICK:-0}; rounds=2; sizes=256x512x1024:bfloat16,256x512x1024:float16
[ $QUICK = 1 ] && rounds=1 && sizes=256x512x1024:bfloat16
ROOT=$PWD; HERE=$ROOT/benchmarks/results/prepared-20261207-s46/scripts; S45=$ROOT/benchmarks/results/h100-20261206-s45/scripts
S42=$ROOT/benchmarks/results/h100-20261206-s42/scripts; S43=$ROOT/benchmarks/results/h100-20261206-s43/scripts
S23=$ROOT/benchmarks/results/h200-20261203-s23/scripts
bash benchmarks/device_env.sh > $OUT/a-env.txt 2>&1; head -2 $OUT/a-env.txt
for v in rs2s mbar; do
  patch_file=$S45/wgmma-rs2s.patch; [ $v = mbar ] && patch_file=$HERE/mbar.patch
  rm -rf /tmp/$v && mkdir /tmp/$v && cp -r lltm_jit src tests benchmarks bench.py pyproject.toml /tmp/$v/
  (cd /tmp/$v && patch -s -p1 < $patch_file) || exit 1
  (cd /tmp/$v && PYTHONPATH=/tmp/$v LLTM_JIT_CACHE_DIR=/tmp/cache-$v timeout 200 python3 $S42/check_streamed.py > $OUT/a-check-$v.txt 2>&1) &
done
# rs2s's probe tree builds beside them
rm -rf /tmp/probe-rs2s && mkdir /tmp/probe-rs2s && cp -r /tmp/rs2s/lltm_jit /tmp/rs2s/src /tmp/probe-rs2s/
(cd /tmp/probe-rs2s && python3 $S43/probe_phases.py src/tensor_core_streamed.cuh && python3 $S45/probe_chunks.py src/tensor_core_streamed.cuh) || exit 1
[ $QUICK = 1 ] || (cd /tmp/probe-rs2s && PYTHONPATH=/tmp/probe-rs2s LLTM_JIT_CACHE_DIR=/tmp/cache-probe-rs2s timeout 200 python3 -m lltm_jit build > $OUT/a-build-probe.txt 2>&1) &
# wgmma's own rate, unswizzled and swizzled (~20 s), while they build
nvcc -O3 -gencode arch=compute_90a,code=sm_90a -o /tmp/wgmma_rate $S45/wgmma_rate.cu && timeout 60 /tmp/wgmma_rate > $OUT/a-wgmma-rate.txt 2>&1
echo "wgmma_rate rc=$?"; cat $OUT/a-wgmma-rate.txt
wait
bases=()
for v in rs2s mbar; do
  echo "== check $v"; grep -v Warn $OUT/a-check-$v.txt | grep x | cut -c1-120
  python3 -c "import sys,re; ls=[l for l in open(sys.argv[1]) if 'streamed:' in l]; \
e=[float(x) for l in ls for x in re.findall(r'streamed: (\S+) (\S+) (\S+)', l)[0]]; sys.exit(0 if len(ls)==8 and max(e)<1e-2 else 1)" \
    $OUT/a-check-$v.txt && bases+=(--base /tmp/$v) || echo "$v failed its check"
done
[ ${#bases[@]} -gt 0 ] || exit 1
PYTHONPATH=$ROOT timeout 240 python3 -m benchmarks.ab "${bases[@]}" --rounds $rounds --sizes $sizes > $OUT/a-ab.txt 2>&1
echo "ab rc=$? (labels: ${bases[*]} in order, then new: main)"; sed -n '/^size/,$p' $OUT/a-ab.txt
[ $QUICK = 1 ] && exit 0
# rs2s's phases after the timings: the quicker answer comes first where the call runs out of time
if grep -q "rs2s" <<< "${bases[*]:-}"; then
  (cd /tmp/probe-rs2s && PYTHONPATH=/tmp/probe-rs2s LLTM_JIT_CACHE_DIR=/tmp/cache-probe-rs2s timeout 60 \
    python3 $S23/one_forward.py 256 512 1024 bfloat16 64) 2>&1 | grep probe > $OUT/a-probe.txt
  echo "== rs2s probe"; sed 's/per step cycles: //' $OUT/a-probe.txt
fi
# the tests of each variant whose bf16 forward is under main's
# (ab's last columns: each label's least over base0's, for the labels after base0, main last)
python3 - $OUT/a-ab.txt ${bases[@]} > /tmp/winners <<'PY'
import sys
names = [b.split("/")[-1] for b in sys.argv[2:] if b != "--base"]
for line in open(sys.argv[1]):
    parts = line.split()
    if parts[:2] == ["256x512x1024:bfloat16", "fwd"]:
        *over_first, main = [1.0] + [float(x) for x in parts[-len(names):]]
        for name, ratio in zip(names, over_first):
            print(f"{name} {ratio / main:.3f}")
PY
cat /tmp/winners
for v in $(awk '$2 < 1 {print $1}' /tmp/winners); do
  (cd /tmp/$v && PYTHONPATH=/tmp/$v LLTM_JIT_CACHE_DIR=/tmp/cache-$v timeout 200 python3 -m pytest tests/test_sequence.py tests/test_loader.py \
    -q -n 8 -p no:cacheprovider -k "streamed or long_sequence or peak_memory or arch") > $OUT/a-tests-$v.txt 2>&1
  echo "tests $v rc=$?"; grep -E "^(FAILED|ERROR)|passed|failed" $OUT/a-tests-$v.txt
done
