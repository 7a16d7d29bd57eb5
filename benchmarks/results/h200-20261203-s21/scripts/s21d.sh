#!/usr/bin/env bash
# session 21 run d: test_export and test_bench alone, to name call c's two errors
set -uo pipefail
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 LLTM_JIT_CACHE_DIR=/tmp/lltm-cache
python3 -m lltm_jit build > /dev/null 2>&1
timeout 190 python3 -m pytest -q -rfE -p no:cacheprovider -n 12 --timeout 170 --durations=6 tests/test_export.py \
  tests/test_bench.py > $OUT/d-tests.txt 2>&1; echo "tests rc=$?"
pkill -f pytest; grep -E "FAILED|ERROR|passed|failed|^[0-9.]+s (call|setup)" $OUT/d-tests.txt | tail -14 | cut -c1-200
