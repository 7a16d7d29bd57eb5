#!/usr/bin/env bash
# session 25 call b: the whole test suite on the working tree (the bulk gather), 14 workers
set -uo pipefail
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 LLTM_JIT_CACHE_DIR=/tmp/lltm-cache
python3 -m lltm_jit build > $OUT/b-build.txt 2>&1; grep -E "built in" $OUT/b-build.txt | head -1
timeout 470 python3 -m pytest -q -p no:cacheprovider -n 14 --timeout 300 tests > $OUT/b-tests.txt 2>&1
echo "tests rc=$?"; grep -E "FAILED|ERROR" $OUT/b-tests.txt | head -20 | cut -c1-250; tail -3 $OUT/b-tests.txt | cut -c1-300
