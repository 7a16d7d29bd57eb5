#!/usr/bin/env bash
# Session 35, call c (s35b.sh cut to the device time left; call b was taken back mid-run): on branch
# issue21-s35, benchmarks.ab of main (s35.patch reversed) and the tree with tc-after.patch against
# the tree, then the sequence op's CUDA tests on the tree.
set -uo pipefail
export PYTHONUNBUFFERED=1
ROOT=$PWD; S=$ROOT/benchmarks/results/h100-20261206-s35/scripts
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
bash benchmarks/device_env.sh > $OUT/c-env.txt 2>&1
rm -rf /tmp/main /tmp/tcafter && mkdir /tmp/main /tmp/tcafter
cp -r lltm_jit src /tmp/main/ && (cd /tmp/main && patch -s -R -p1 < $S/s35.patch) || exit 1
cp -r lltm_jit src /tmp/tcafter/ && (cd /tmp/tcafter && patch -s -p1 < $S/tc-after.patch) || exit 1
PYTHONPATH=$ROOT timeout 120 python3 -m benchmarks.ab --base /tmp/main --base /tmp/tcafter --rounds 2 \
  --sizes 16x32x128:float32,64x256x512:float32,8x256x512:float16,64x1024x1024:float16,64x256x512:bfloat16,128x512x512:float16 \
  > $OUT/c-ab.txt 2>&1
echo "ab rc=$?"
tail -13 $OUT/c-ab.txt
LLTM_JIT_CACHE_DIR=/tmp/tests timeout 100 python3 -m pytest -q -n 14 -p no:cacheprovider \
  tests/test_sequence.py tests/test_amp.py tests/test_lstm_parity.py -k "not cpu" > $OUT/c-tests.txt 2>&1
echo "tests rc=$?"
tail -n 3 $OUT/c-tests.txt
