#!/usr/bin/env bash
# Prepared in session 32 (not run), on main: the cold first import in a fresh cache with
# `lltm_jit info`'s per-file times, then issue 21's cuDNN plan (bench.py --plan cudnn).
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
bash benchmarks/device_env.sh > $OUT/c-env.txt 2>&1
rm -rf /tmp/cold
LLTM_JIT_CACHE_DIR=/tmp/cold python3 - > $OUT/c-build.txt 2>&1 <<'PY'
import subprocess, sys, time
start = time.perf_counter()
subprocess.run([sys.executable, "-c", "import lltm_jit"], check=True)
print(f"cold import wall: {time.perf_counter() - start:.1f} s")
PY
LLTM_JIT_CACHE_DIR=/tmp/cold python3 -m lltm_jit info >> $OUT/c-build.txt 2>&1
grep -E "cold import|built in" $OUT/c-build.txt
L=$(find /tmp/cold -name .ninja_log | head -1)
awk 'NR>1 {printf "%6.1f %s\n", ($2-$1)/1000, $4}' $L | sort -rn > $OUT/c-ninja.txt
head -4 $OUT/c-ninja.txt
LLTM_JIT_CACHE_DIR=/tmp/cold timeout 240 python3 bench.py --plan cudnn --budget 0.5 --out $OUT > $OUT/c-plan-cudnn.txt 2>&1
echo "plan rc=$?"
grep -E "^bars:|^  OVER|met" $OUT/c-plan-cudnn.txt | head -30
rm -f $OUT/*.png
