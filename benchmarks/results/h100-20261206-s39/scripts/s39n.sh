#!/usr/bin/env bash
# Session 39, call n, on main + walk.patch (RowWalk: the tensor-core kernels' loops over units,
# the cluster backward's exchange, the cluster forward's sends and the shared-memory pass advance
# row and column without a division; the forward's gather rank computed once). SASS (nvcc 13.0,
# sm_90a): no integer division left in the step loops of the half types' tensor-core kernels
# (but the non-bulk gather and the padding's zeros, which sm_90 at states of multiples of 16 does
# not run); before, one a unit a step (the unit loops), two a 16-byte chunk a step (the cluster
# backward's exchange), one an item a step (the cluster forward's sends). Predicted: the half
# types' rows 0.97-1.00 of main (the cluster backward's exchange the most). benchmarks.ab of main
# against the tree, 2 rounds; the sequence op's CUDA tests.
set -uo pipefail
export PYTHONUNBUFFERED=1
ROOT=$PWD; HERE=$ROOT/benchmarks/results/h100-20261206-s39/scripts
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
bash benchmarks/device_env.sh > $OUT/n-env.txt 2>&1
rm -rf /tmp/main && mkdir /tmp/main && cp -r lltm_jit src /tmp/main/ && (cd /tmp/main && patch -s -R -p1 < $HERE/walk.patch) || exit 1
export PYTHONPATH=$ROOT
timeout 200 python3 -m benchmarks.ab --base /tmp/main --rounds 2 --sizes \
  8x256x512:float16,64x1024x1024:float16,128x512x512:float16,16x512x1024:float16,1024x256x256:bfloat16,64x256x512:bfloat16,64x256x512:float32 \
  > $OUT/n-ab.txt 2>&1
echo "ab rc=$?"; sed -n '/^size/,$p' $OUT/n-ab.txt
LLTM_JIT_CACHE_DIR=/tmp/cache-new timeout 100 python3 -m pytest -q -n 14 -p no:cacheprovider \
  tests/test_sequence.py tests/test_lstm_parity.py tests/test_amp.py -k "not cpu" > $OUT/n-tests.txt 2>&1
echo "tests rc=$?"; tail -n 15 $OUT/n-tests.txt | grep -E "FAILED|passed|failed"
