#!/usr/bin/env bash
# Session 37, call e: the operand by packs in the backward alone (backward.patch on 902a335; call d
# had it in both directions, and the forward came out slower, the backward faster).
# benchmarks.ab (902a335 against the tree), the sequence op's CUDA tests.
set -uo pipefail
export PYTHONUNBUFFERED=1
ROOT=$PWD; HERE=$ROOT/benchmarks/results/h100-20261206-s37/scripts
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
rm -rf /tmp/rest && mkdir /tmp/rest && cp -r lltm_jit src /tmp/rest/ && (cd /tmp/rest && patch -s -R -p1 < $HERE/backward.patch) || exit 1
export PYTHONPATH=$ROOT
timeout 100 python3 -m benchmarks.ab --base /tmp/rest --rounds 2 --sizes \
  64x256x512:float32:paired,64x256x512:float32,40x128x384:float32 > $OUT/e-ab.txt 2>&1
echo "ab rc=$?"; sed -n '/^size/,$p' $OUT/e-ab.txt
LLTM_JIT_CACHE_DIR=/tmp/cache-new timeout 80 python3 -m pytest -q -n 14 -p no:cacheprovider \
  tests/test_sequence.py tests/test_lstm_parity.py tests/test_amp.py -k "not cpu" > $OUT/e-tests.txt 2>&1
echo "tests rc=$?"; tail -n 15 $OUT/e-tests.txt | grep -E "FAILED|passed|failed"
