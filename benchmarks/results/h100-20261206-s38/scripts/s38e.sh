#!/usr/bin/env bash
# Session 38, call e, on main: where the 16x32x128 fp32 module's fwd+bwd waits back to back with
# the input's gradient (scripts/host_block.py).
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
HERE=$PWD/benchmarks/results/h100-20261206-s38/scripts
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
LLTM_JIT_CACHE_DIR=/tmp/cache-e timeout 150 python3 $HERE/host_block.py > $OUT/e-block.txt 2>&1
echo "rc=$?"; grep -v "^lltm_jit:" $OUT/e-block.txt
