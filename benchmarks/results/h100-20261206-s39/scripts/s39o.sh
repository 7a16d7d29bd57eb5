#!/usr/bin/env bash
# Session 39, prepared for the next session (not run: no device time left), on the branch
# issue21-row-walk-light (main + light.patch). Call n's walks took the held cluster forward to
# 0.866 at 8x256x512 fp16 but made the four-item kernels spill (1024x256x256 bf16 1.07 / 1.11).
# This branch walks only the cluster-only loops (the cluster backward's exchange; the cluster
# forward's sends, from the items' own row and column, no walk) and the held forward's units.
# SASS (nvcc 13.0, sm_90a): every kernel without a cluster the same as main's; no spill more in
# any step loop; no division left in the held forward's step loop (946 -> 838 instructions) or
# the cluster backward's exchange (one left in the units' loop). Predicted: 8x256x512 fp16
# forward ~0.87 of main, the cluster rows (8x256x512, 128x512x512, 8x128x256 fp16 fwd+bwd)
# 0.95-1.00, every row without a cluster 1.00 (1024x256x256 bf16 among them).
# benchmarks.ab of main against the tree, 2 rounds; the sequence op's and modules' CUDA tests.
set -uo pipefail
export PYTHONUNBUFFERED=1
ROOT=$PWD; HERE=$ROOT/benchmarks/results/h100-20261206-s39/scripts
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
bash benchmarks/device_env.sh > $OUT/o-env.txt 2>&1
rm -rf /tmp/main && mkdir /tmp/main && cp -r lltm_jit src /tmp/main/ && (cd /tmp/main && patch -s -R -p1 < $HERE/light.patch) || exit 1
export PYTHONPATH=$ROOT
timeout 220 python3 -m benchmarks.ab --base /tmp/main --rounds 2 --sizes \
  8x256x512:float16,8x128x256:float16,128x512x512:float16,64x1024x1024:float16,1024x256x256:bfloat16,64x256x512:bfloat16,64x256x512:float32 \
  > $OUT/o-ab.txt 2>&1
echo "ab rc=$?"; sed -n '/^size/,$p' $OUT/o-ab.txt
LLTM_JIT_CACHE_DIR=/tmp/cache-new timeout 100 python3 -m pytest -q -n 14 -p no:cacheprovider \
  tests/test_sequence.py tests/test_lstm_parity.py tests/test_amp.py -k "not cpu" > $OUT/o-tests.txt 2>&1
echo "tests rc=$?"; tail -n 15 $OUT/o-tests.txt | grep -E "FAILED|passed|failed"
