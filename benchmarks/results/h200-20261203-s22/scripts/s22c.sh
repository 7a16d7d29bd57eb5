#!/usr/bin/env bash
# session 22 call c: the directions at once again, each way with a module and input of its own,
# and one training step's kernel timeline by stream
set -uo pipefail
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 LLTM_JIT_CACHE_DIR=/tmp/lltm-cache
S=benchmarks/results/h200-20261203-s22/scripts
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
  git log --oneline -1; git status --short | head -40; } > $OUT/c-env.txt 2>&1
python3 -m lltm_jit build > $OUT/c-build.txt 2>&1; grep -E "built in" $OUT/c-build.txt | head -2
timeout 120 python3 $S/at_once_trace.py > $OUT/c-trace.txt 2>&1; echo "trace rc=$?"; grep "^==" $OUT/c-trace.txt | cut -c1-250
timeout 240 python3 $S/at_once.py > $OUT/c-at-once.txt 2>&1; echo "at_once rc=$?"
grep -v "^ \|Warning" $OUT/c-at-once.txt | cut -c1-140
