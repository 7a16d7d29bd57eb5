#!/usr/bin/env bash
# session 22 call d: the sequence op's tests on CUDA after the planner's params moved into
# planning_params (every CUDA sequence call builds its params through it)
set -uo pipefail
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 LLTM_JIT_CACHE_DIR=/tmp/lltm-cache
python3 -m lltm_jit build > $OUT/d-build.txt 2>&1; grep -E "built in" $OUT/d-build.txt | head -2
timeout 280 python3 -m pytest -q -rfE -p no:cacheprovider -n 14 --timeout 250 tests/test_sequence.py > $OUT/d-tests.txt 2>&1
echo "tests rc=$?"; pkill -f pytest; grep -E "FAILED|ERROR|passed|failed" $OUT/d-tests.txt | tail -15 | cut -c1-250
