#!/usr/bin/env bash
# session 22 call f: the directions at once inside a caller's CUDA graph, and the at-once test
set -uo pipefail
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 LLTM_JIT_CACHE_DIR=/tmp/lltm-cache
python3 -m lltm_jit build > $OUT/f-build.txt 2>&1; grep -E "built in" $OUT/f-build.txt | head -1
timeout 150 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_lstm_parity.py -k "at_once" > $OUT/f-tests.txt 2>&1
echo "tests rc=$?"; grep -E "FAILED|ERROR|passed|failed|Error" $OUT/f-tests.txt | tail -12 | cut -c1-250
