#!/usr/bin/env bash
# Session 39, call m, on main: the build budget after this session's kernel changes (cold first
# import and one-file edits, benchmarks/build_time.py) and bench.py --plan cudnn in a second
# process (cuDNN's times move between processes: each row is judged against its fastest run).
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
bash benchmarks/device_env.sh > $OUT/m-env.txt 2>&1
timeout 320 python3 benchmarks/build_time.py --warm-runs 2 --out $OUT/m-build.json > $OUT/m-build.txt 2>&1
echo "build rc=$?"; grep -E "cold|warm import|persistent_(forward|backward)_f32|ops.cpp|dtypes.h" $OUT/m-build.txt | head -8
LLTM_JIT_CACHE_DIR=/tmp/cache-m timeout 150 python3 bench.py --plan cudnn --budget 0.5 --out $OUT > $OUT/m-plan-cudnn.txt 2>&1
echo "plan rc=$?"; grep -E "^bars:|L=2" $OUT/m-plan-cudnn.txt | grep -E "bars|met|OVER"
