#!/usr/bin/env bash
# The tensor-core kernels' GPU check in one call: a cold build, the CUDA tests of the sequence op
# (the tensor-core ones among them), then the timing of benchmarks/tensor_cores.py (tensor cores,
# CUDA cores and cuDNN interleaved), whose table comes last. Logs go to $OUT.
#   OUT=/tmp/out bash benchmarks/tensor_core_check.sh
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 LLTM_JIT_CACHE_DIR=${LLTM_JIT_CACHE_DIR:-$(mktemp -d)}
status=0

echo "== build (cold cache $LLTM_JIT_CACHE_DIR)"
timeout 300 python3 -c "import time; t = time.perf_counter(); import lltm_jit; print(lltm_jit.build_info()); \
print(f'cold import {time.perf_counter() - t:.1f} s')" > "$OUT/build.txt" 2>&1 || { cat "$OUT/build.txt"; exit 1; }
timeout 60 python3 -m lltm_jit info >> "$OUT/build.txt" 2>&1
grep -E "cold import|built in|tensor_core|persistent" "$OUT/build.txt" | head -20

echo "== tests (CUDA sequences)"
timeout 240 python3 -m pytest -q -p no:cacheprovider -n 8 --timeout 120 tests/test_sequence.py \
  -k "cuda or tensor_core or which_persistent or peak_memory" > "$OUT/tests.txt" 2>&1 || status=1
tail -25 "$OUT/tests.txt"

echo "== timing"
timeout 240 python3 benchmarks/tensor_cores.py > "$OUT/timing.txt" 2>&1 || status=1
cat "$OUT/timing.txt"
exit $status
