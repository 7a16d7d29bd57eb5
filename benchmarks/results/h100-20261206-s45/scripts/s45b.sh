#!/usr/bin/env bash
# Session 45, call b: the RS product with one chunk's wgmma's in flight (wgmma-rs2.patch, branch
# issue21-streamed-wgmma-rs2) against main's mma.sync product, at 256x512x1024 in bf16 and fp16,
# and both products split by probe_chunks.py into the chunks' copy waits and barriers.
# Predicted: rs2's product phase under main's 11.6k cycles a step (call a: rs 14.1-14.7k, its
# wgmma's drained before every chunk's loads); if the copies' waits are most of main's product,
# the copies bound both. check_streamed gates the rest (every streamed error below 1e-2).
set -uo pipefail
export PYTHONUNBUFFERED=1
ROOT=$PWD; HERE=$ROOT/benchmarks/results/h100-20261206-s45/scripts
S42=$ROOT/benchmarks/results/h100-20261206-s42/scripts; S43=$ROOT/benchmarks/results/h100-20261206-s43/scripts
S23=$ROOT/benchmarks/results/h200-20261203-s23/scripts
bash benchmarks/device_env.sh > $OUT/b-env.txt 2>&1; head -2 $OUT/b-env.txt
rm -rf /tmp/rs2 && mkdir /tmp/rs2 && cp -r lltm_jit src tests benchmarks bench.py pyproject.toml /tmp/rs2/
(cd /tmp/rs2 && patch -s -p1 < $HERE/wgmma-rs2.patch) || exit 1
# the probe trees build while the check runs
for v in main rs2; do
  src=$ROOT; [ $v = main ] || src=/tmp/rs2
  rm -rf /tmp/probe-$v && mkdir /tmp/probe-$v && cp -r $src/lltm_jit $src/src /tmp/probe-$v/
  (cd /tmp/probe-$v && python3 $S43/probe_phases.py src/tensor_core_streamed.cuh && python3 $HERE/probe_chunks.py src/tensor_core_streamed.cuh) || exit 1
  (cd /tmp/probe-$v && PYTHONPATH=/tmp/probe-$v LLTM_JIT_CACHE_DIR=/tmp/cache-probe-$v timeout 200 python3 -m lltm_jit build > $OUT/b-build-probe-$v.txt 2>&1) &
done
(cd /tmp/rs2 && PYTHONPATH=/tmp/rs2 LLTM_JIT_CACHE_DIR=/tmp/cache-rs2 timeout 150 python3 $S42/check_streamed.py) > $OUT/b-check-rs2.txt 2>&1
echo "check rs2 rc=$?"; grep -v Warn $OUT/b-check-rs2.txt | grep x | cut -c1-120
python3 -c "import sys,re; ls=[l for l in open(sys.argv[1]) if 'streamed:' in l]; \
e=[float(x) for l in ls for x in re.findall(r'streamed: (\S+) (\S+) (\S+)', l)[0]]; sys.exit(0 if len(ls)==8 and max(e)<1e-2 else 1)" \
  $OUT/b-check-rs2.txt || { echo "rs2 failed its check"; exit 1; }
wait
PYTHONPATH=$ROOT timeout 240 python3 -m benchmarks.ab --base /tmp/rs2 --rounds 3 \
  --sizes 256x512x1024:bfloat16,256x512x1024:float16 > $OUT/b-ab.txt 2>&1
echo "ab rc=$? (new: main, base0: rs2; the ratio is main's least over rs2's)"; sed -n '/^size/,$p' $OUT/b-ab.txt
for v in main rs2; do
  echo "== $v" >> $OUT/b-probe.txt
  (cd /tmp/probe-$v && PYTHONPATH=/tmp/probe-$v LLTM_JIT_CACHE_DIR=/tmp/cache-probe-$v timeout 60 \
    python3 $S23/one_forward.py 256 512 1024 bfloat16 64) 2>&1 | grep probe >> $OUT/b-probe.txt
  echo "== $v at 128x512x1024 (streamed forced)" >> $OUT/b-probe.txt
  (cd /tmp/probe-$v && PYTHONPATH=/tmp/probe-$v LLTM_JIT_CACHE_DIR=/tmp/cache-probe-$v LLTM_JIT_SEQUENCE_KERNEL=streamed \
    timeout 60 python3 $S23/one_forward.py 128 512 1024 bfloat16 64) 2>&1 | grep probe >> $OUT/b-probe.txt
done
sed 's/per step cycles: //' $OUT/b-probe.txt
(cd /tmp/rs2 && PYTHONPATH=/tmp/rs2 LLTM_JIT_CACHE_DIR=/tmp/cache-rs2 timeout 200 python3 -m pytest tests/test_sequence.py tests/test_loader.py \
  -q -n 8 -p no:cacheprovider -k "streamed or long_sequence or peak_memory or arch") > $OUT/b-tests-rs2.txt 2>&1
echo "tests rs2 rc=$?"; grep -E "^(FAILED|ERROR)|passed|failed" $OUT/b-tests-rs2.txt
