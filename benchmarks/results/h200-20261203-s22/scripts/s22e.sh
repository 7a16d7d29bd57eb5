#!/usr/bin/env bash
# session 22 call e: torch.export and AOTInductor of the 2-layer bidirectional sequence model on
# CUDA against eager, whose layers now run their directions at once (the graphs one after the other)
set -uo pipefail
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 LLTM_JIT_CACHE_DIR=/tmp/lltm-cache
export LD_PRELOAD=$(g++ -print-file-name=libstdc++.so.6)  # docs/deployment.md: torch 2.11's AOTI load with GCC 13
python3 -m lltm_jit build > $OUT/e-build.txt 2>&1; grep -E "built in" $OUT/e-build.txt | head -1
timeout 330 python3 -m pytest -q -rfEs -p no:cacheprovider -n 6 --timeout 320 tests/test_export.py \
  -k "cuda and sequence" --durations=8 > $OUT/e-tests.txt 2>&1
echo "tests rc=$?"; pkill -f pytest; grep -E "FAILED|ERROR|SKIP|passed|failed|^[0-9.]+s " $OUT/e-tests.txt | tail -16 | cut -c1-220
