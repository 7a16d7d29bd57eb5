#!/usr/bin/env bash
# Session 38, call d, on main: the host's time in parts for the 16x32x128 fp32 row, with and
# without the input's gradient (scripts/host_parts.py); then the build budget
# (benchmarks/build_time.py: cold first import and one-file edits) after f87f516 and b47936c.
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
HERE=$PWD/benchmarks/results/h100-20261206-s38/scripts
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
bash benchmarks/device_env.sh > $OUT/d-env.txt 2>&1
LLTM_JIT_CACHE_DIR=/tmp/cache-d timeout 120 python3 $HERE/host_parts.py > $OUT/d-host.txt 2>&1
echo "host rc=$?"; grep -v "^lltm_jit:" $OUT/d-host.txt
timeout 300 python3 benchmarks/build_time.py --warm-runs 2 --out $OUT/d-build.json > $OUT/d-build.txt 2>&1
echo "build rc=$?"; grep -E "cold|warm import|persistent_(forward|backward)_f32|ops.cpp|dtypes.h" $OUT/d-build.txt | head -8
