#!/usr/bin/env bash
# Session 38, prepared for the next session (not run: no device time left), on the branch
# issue21-backward-direct (main + backward-direct.patch): the unpaired CUDA-core backward stores
# its sums from the product where its tiling has one slice and more than one tile (as the paired
# one), skipping the partial sums in shared memory, a block barrier and a pass that divided by the
# state at every element; with more slices, that pass without the divisions. Predicted: fwd+bwd
# 0.93-0.97 of main at 64x256x512 and 40x128x384 fp32 (one slice, 16 and 8 tiles), ~0.98 at
# 200x256x256 (2 slices), 1.00 at 16x32x128 (one tile) and at the paired size (its kernel
# unchanged). benchmarks.ab of main against the branch; the sequence op's CUDA tests.
set -uo pipefail
export PYTHONUNBUFFERED=1
ROOT=$PWD; HERE=$ROOT/benchmarks/results/h100-20261206-s38/scripts
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
bash benchmarks/device_env.sh > $OUT/i-env.txt 2>&1
rm -rf /tmp/main && mkdir /tmp/main && cp -r lltm_jit src /tmp/main/ \
  && (cd /tmp/main && patch -s -R -p1 < $HERE/backward-direct.patch) || exit 1
export PYTHONPATH=$ROOT
timeout 200 python3 -m benchmarks.ab --base /tmp/main --rounds 3 --sizes \
  64x256x512:float32,40x128x384:float32,200x256x256:float32,64x256x256:float32,16x32x128:float32,64x256x512:float64,64x256x512:float32:paired \
  > $OUT/i-ab.txt 2>&1
echo "ab rc=$?"; sed -n '/^size/,$p' $OUT/i-ab.txt
LLTM_JIT_CACHE_DIR=/tmp/cache-new timeout 100 python3 -m pytest -q -n 14 -p no:cacheprovider \
  tests/test_sequence.py tests/test_lstm_parity.py tests/test_amp.py -k "not cpu" > $OUT/i-tests.txt 2>&1
echo "tests rc=$?"; tail -n 15 $OUT/i-tests.txt | grep -E "FAILED|passed|failed"
