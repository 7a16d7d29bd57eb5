#!/usr/bin/env bash
set -uo pipefail
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 LLTM_JIT_CACHE_DIR=/tmp/lltm-8
python3 -c "import lltm_jit" > $OUT/build.txt 2>&1 || { tail -30 $OUT/build.txt; exit 1; }
timeout 200 python3 .gpu/unit8.py 2>&1 | tee $OUT/unit.txt
