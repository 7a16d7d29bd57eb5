#!/usr/bin/env bash
# Session 33: the test suite's device tests (-k "not cpu"; CI runs the CPU ones) with each
# result's name on its own line, as s33b.sh's run was cut at its limit with 3 failures and an
# error whose names it did not print.
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
nvidia-smi --query-gpu=name --format=csv,noheader
python3 -m lltm_jit build 2>&1 | grep "built in"
timeout 470 python3 -m pytest -v -rfE -p no:cacheprovider -n 16 --timeout 240 --durations=15 -k "not cpu" tests \
  > $OUT/c-tests.txt 2>&1
echo "tests rc=$?"
grep -E "(FAILED|ERROR) |passed|failed" $OUT/c-tests.txt | tail -15
grep -A25 "slowest" $OUT/c-tests.txt | head -20
