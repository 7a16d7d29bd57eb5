#!/usr/bin/env bash
# session 22 call g: after the review's fixes (saved tensors recorded on the side stream, a side
# stream per thread, the op's checks and fake kernel), the module's and the errors' tests on CUDA
set -uo pipefail
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 LLTM_JIT_CACHE_DIR=/tmp/lltm-cache
python3 -m lltm_jit build > $OUT/g-build.txt 2>&1; grep -E "built in" $OUT/g-build.txt | head -1
timeout 110 python3 -m pytest -q -rfE -p no:cacheprovider -n 14 --timeout 100 tests/test_lstm_parity.py \
  tests/test_errors.py > $OUT/g-tests.txt 2>&1
echo "tests rc=$?"; pkill -f pytest; grep -E "FAILED|ERROR|passed|failed" $OUT/g-tests.txt | tail -12 | cut -c1-250
