#!/usr/bin/env bash
# Session 29's second call (s29b.sh never started: no device): the tree is main with two changes,
# each a patch beside this script: cta-arrive.patch (a cluster exchange's mbarrier arrival at the
# block's scope: a-phases.txt had warp 0's stores of a step at ~1300 cycles behind the arrival's
# MEMBAR.ALL.GPU) and held.patch (the cluster forward of 8 rows holds its fragments of W_h in
# registers: the product reads only h from shared memory). (1) benchmarks.ab: main, main + the
# arrival, the tree; (2) the CUDA tests of the sequence op, autocast and the LSTM-parity module;
# (3) the phases on the tree; (4) bench.py's float16 rows in cuDNN's persistent range.
set -uo pipefail
export PYTHONUNBUFFERED=1
ROOT=$PWD; S=$ROOT/benchmarks/results/h200-20261205-s29/scripts
bash benchmarks/device_env.sh > $OUT/c-env.txt 2>&1
rm -rf /tmp/main /tmp/cta /tmp/ph && mkdir /tmp/main /tmp/cta /tmp/ph
cp -r lltm_jit src /tmp/cta/ && (cd /tmp/cta && patch -s -R -p1 < $S/held.patch && rm -f src/*_held.cu) || exit 1
cp -r /tmp/cta/lltm_jit /tmp/cta/src /tmp/main/ && (cd /tmp/main && patch -s -R -p1 < $S/cta-arrive.patch) || exit 1
grep -c "release.cluster.shared::cta" /tmp/main/src/tensor_core.cuh /tmp/cta/src/tensor_core.cuh src/tensor_core.cuh
ls /tmp/cta/src | grep -c held
cp -r lltm_jit src /tmp/ph/ && python3 $S/phases.py /tmp/ph
(cd /tmp/ph && PYTHONPATH=/tmp/ph LLTM_JIT_CACHE_DIR=/tmp/ph-cache python3 -m lltm_jit build 2>&1 | grep "built in") &
PYTHONPATH=$ROOT timeout 330 python3 -m benchmarks.ab --base /tmp/main --base /tmp/cta --rounds 3 \
  --sizes 8x256x512:float16,8x128x256:float16,32x256x256:float16,40x8x512:bfloat16,12x8x330:float16,64x1024x1024:float16,64x256x512:bfloat16 \
  > $OUT/c-ab.txt 2>&1
echo "ab rc=$?"
wait
python3 - <<'PY' | tee $OUT/c-ab-table.txt
import collections, os, re
d = collections.defaultdict(list)
for line in open(os.path.join(os.environ["OUT"], "c-ab.txt")):
    m = re.match(r"^(base\d|new)\s+(\S+)\s+(fwd\+bwd|fwd)\s+([\d.]+) us", line)
    if m:
        d[(m.group(2), m.group(3), m.group(1))].append(float(m.group(4)))
print(f"{'size':24s} {'kind':8s} {'main':>23s} {'+ arrival':>23s} {'+ held (tree)':>23s}  min: arrival/main tree/main")
for s, kind in dict.fromkeys((k[0], k[1]) for k in d):
    a, b, c = (d[(s, kind, v)] for v in ("base0", "base1", "new"))
    f = lambda v: " ".join(f"{x:7.1f}" for x in v)
    print(f"{s:24s} {kind:8s} {f(a):>23s} {f(b):>23s} {f(c):>23s}  {min(b) / min(a):.3f} {min(c) / min(a):.3f}")
PY
export PYTHONPATH=$ROOT
timeout 250 python3 -m pytest -q -n 12 -p no:cacheprovider tests/test_sequence.py tests/test_amp.py tests/test_lstm_parity.py \
  -k "not cpu" > $OUT/c-tests.txt 2>&1
echo "tests rc=$?"; tail -3 $OUT/c-tests.txt
(cd /tmp/ph && PYTHONPATH=/tmp/ph LLTM_JIT_CACHE_DIR=/tmp/ph-cache timeout 60 python3 $S/phases_run.py \
  8x256x512:float16:256 8x128x256:float16:64 64x1024x1024:float16:64) > $OUT/c-phases-raw.txt 2>&1
python3 $S/phases_table.py $OUT/c-phases-raw.txt > $OUT/c-phases.txt 2>&1
timeout 100 python3 bench.py --kind sequence --sizes 8x256x512:T256,8x128x256,32x256x256 --dtypes float16 \
  --backends lltm_jit,lstm --budget 0.5 --no-save > $OUT/c-bench.txt 2>&1
echo "bench rc=$?"
grep -E "^  (lltm_jit|lstm) |^sequence|8x|32x" $OUT/c-bench.txt | tail -16
cat $OUT/c-phases.txt
