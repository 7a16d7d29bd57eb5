#!/usr/bin/env bash
# Session 40, call f, on the branch issue21-exchange-pass (main a4df589 + exchange.patch: the
# cluster backward's exchange sums a chunk's four columns in one pass over the splits; SASS: its
# step loops 10-16% fewer instructions, the kernels without clusters identical). Predicted: the
# cluster rows' fwd+bwd 0.97-0.99 of main, forwards 1.00. benchmarks.ab against main, 3 rounds
# (first: the device time left is short), then the CUDA tests of the sequence op and modules.
set -uo pipefail
export PYTHONUNBUFFERED=1
ROOT=$PWD; HERE=$ROOT/benchmarks/results/h100-20261206-s40/scripts
rm -rf /tmp/main && mkdir /tmp/main && cp -r lltm_jit src /tmp/main/ && (cd /tmp/main && patch -s -R -p1 < $HERE/exchange.patch) || exit 1
export PYTHONPATH=$ROOT
timeout 120 python3 -m benchmarks.ab --base /tmp/main --rounds 3 --sizes \
  8x256x512:float16,8x128x256:float16,16x512x1024:float16,64x1024x1024:float16 > $OUT/f-ab.txt 2>&1
echo "ab rc=$?"; sed -n '/^size/,$p' $OUT/f-ab.txt
LLTM_JIT_CACHE_DIR=/tmp/cache-new timeout 100 python3 -m pytest -q -n 14 -p no:cacheprovider \
  tests/test_sequence.py tests/test_lstm_parity.py tests/test_amp.py -k "not cpu" > $OUT/f-tests.txt 2>&1
echo "tests rc=$?"; tail -n 15 $OUT/f-tests.txt | grep -E "FAILED|passed|failed"
