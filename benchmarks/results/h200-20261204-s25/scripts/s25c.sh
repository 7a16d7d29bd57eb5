#!/usr/bin/env bash
# session 25 call c: the whole test suite again (b stopped at its time limit with one failure and
# one error unnamed), verbose so that each result shows as it comes, 15 workers
set -uo pipefail
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 LLTM_JIT_CACHE_DIR=/tmp/lltm-cache
python3 -m lltm_jit build > $OUT/c-build.txt 2>&1; grep -E "built in" $OUT/c-build.txt | head -1
timeout 530 python3 -m pytest -v -rfE -p no:cacheprovider -n 15 --timeout 240 --durations=40 tests > $OUT/c-tests.txt 2>&1
echo "tests rc=$?"; grep -E "(FAILED|ERROR) " $OUT/c-tests.txt | head -20 | cut -c1-250; tail -3 $OUT/c-tests.txt | cut -c1-300
