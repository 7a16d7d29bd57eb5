#!/usr/bin/env bash
# Session 28's fourth call. The working tree is main plus the fix for s28b.sh's one failure (a
# traced graph copies lengths plainly, not through pinned memory) plus the host products
# (hp.patch); tree A is the same without hp.patch. On A: the LSTM-parity tests on CUDA (the
# failed one among them), two more cold first imports in fresh caches. Then the host products'
# A/B on bench.py's 16x32x128 fp32 row once more, A and this tree alternating, four rounds of a
# longer budget (s28a.sh's two rounds moved by +-20% within a run).
set -uo pipefail
export PYTHONUNBUFFERED=1
bash benchmarks/device_env.sh > $OUT/e-env.txt 2>&1
B=$PWD A=/tmp/tree-a
rm -rf $A && cp -r $B $A && (cd $A && git apply -R hp.patch) || exit 1
cd $A && export PYTHONPATH=$A
for i in 1 2; do
  LLTM_JIT_CACHE_DIR=$(mktemp -d) python3 - <<'PY'
import subprocess, sys, time
start = time.perf_counter()
out = subprocess.run([sys.executable, "-c", "import lltm_jit"], check=True, capture_output=True, text=True)
print(out.stderr.strip().splitlines()[-1], f"; cold import wall: {time.perf_counter() - start:.1f} s")
PY
done > $OUT/e-build.txt 2>&1
cat $OUT/e-build.txt
export LLTM_JIT_CACHE_DIR=/tmp/cache-a
timeout 200 python3 -m pytest -q -rfE -p no:cacheprovider -n 15 --timeout 150 tests/test_lstm_parity.py \
  -k "not cpu" > $OUT/e-tests.txt 2>&1
echo "parity tests rc=$?"; tail -2 $OUT/e-tests.txt
(cd $B && PYTHONPATH=$B LLTM_JIT_CACHE_DIR=/tmp/cache-b python3 -c "import lltm_jit" 2>&1 | tail -1)
for round in 1 2 3 4; do
  for tree in $A $B; do
    echo "== round $round tree $([ $tree = $A ] && echo main || echo host-products)"
    (cd $tree && PYTHONPATH=$tree LLTM_JIT_CACHE_DIR=$([ $tree = $A ] && echo /tmp/cache-a || echo /tmp/cache-b) \
      timeout 60 python3 bench.py --kind sequence --sizes 16x32x128 --dtypes float32 --backends lltm_jit,lstm \
      --budget 2 --no-save 2>&1 | grep -E "^  (lltm_jit|lstm) ")
  done
done > $OUT/e-hp.txt 2>&1
cat $OUT/e-hp.txt
