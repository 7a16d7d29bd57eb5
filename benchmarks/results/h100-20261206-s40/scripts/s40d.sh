#!/usr/bin/env bash
# Session 40, call d, on the branch issue21-sums-wide (main + wide.patch: the four-item forwards
# sum every item before their cells; SASS: no spill in them, every other forward identical to
# main's). Call c's every-item pass had 1024x256x256 bf16's forward at 0.878 of main but slowed
# the one- and two-item kernels. Predicted: the four-item rows (1024x256x256 bf16, 2048x128x256
# bf16, 128x512x512 fp16 if its tiling has four items) ~0.88-0.95 of main, the rest 1.00.
# benchmarks.ab against main, 3 rounds; the CUDA tests of the sequence op and modules; the cold
# build and warm import (benchmarks/build_time.py --edits none) and `python -m lltm_jit info`.
set -uo pipefail
export PYTHONUNBUFFERED=1
ROOT=$PWD; HERE=$ROOT/benchmarks/results/h100-20261206-s40/scripts
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
bash benchmarks/device_env.sh > $OUT/d-env.txt 2>&1
rm -rf /tmp/main && mkdir /tmp/main && cp -r lltm_jit src /tmp/main/ && (cd /tmp/main && patch -s -R -p1 < $HERE/wide.patch) || exit 1
export PYTHONPATH=$ROOT
timeout 200 python3 -m benchmarks.ab --base /tmp/main --rounds 3 --sizes \
  1024x256x256:bfloat16,2048x128x256:bfloat16,128x512x512:float16,512x256x512:bfloat16,8x256x512:float16,64x256x512:float32 \
  > $OUT/d-ab.txt 2>&1
echo "ab rc=$?"; sed -n '/^size/,$p' $OUT/d-ab.txt
LLTM_JIT_CACHE_DIR=/tmp/cache-new timeout 100 python3 -m pytest -q -n 14 -p no:cacheprovider \
  tests/test_sequence.py tests/test_lstm_parity.py tests/test_amp.py -k "not cpu" > $OUT/d-tests.txt 2>&1
echo "tests rc=$?"; tail -n 15 $OUT/d-tests.txt | grep -E "FAILED|passed|failed"
timeout 150 python3 benchmarks/build_time.py --edits none --warm-runs 2 --out $OUT/d-build.json > $OUT/d-build.txt 2>&1
echo "build rc=$?"; grep -iE "cold|warm" $OUT/d-build.txt | head -4
LLTM_JIT_CACHE_DIR=/tmp/cache-new python3 -m lltm_jit info > $OUT/d-info.txt 2>&1; grep -iE "critical|ops.cpp" $OUT/d-info.txt | head -4
