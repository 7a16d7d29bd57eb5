#!/usr/bin/env bash
# Session 29's fifth call, on main (0a5dc75, with the two held-fragment kernel files): the H200's
# cold first import, twice in fresh caches, with `lltm_jit info`'s per-file times of the second.
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
bash benchmarks/device_env.sh > $OUT/f-env.txt 2>&1
for i in 1 2; do
  rm -rf /tmp/cold-$i
  LLTM_JIT_CACHE_DIR=/tmp/cold-$i python3 - <<'PY'
import subprocess, sys, time
start = time.perf_counter()
subprocess.run([sys.executable, "-c", "import lltm_jit"], check=True)
print(f"cold import wall: {time.perf_counter() - start:.1f} s")
PY
done > $OUT/f-build.txt 2>&1
LLTM_JIT_CACHE_DIR=/tmp/cold-2 python3 -m lltm_jit info >> $OUT/f-build.txt 2>&1
grep -E "cold import|built in" $OUT/f-build.txt
L=$(find /tmp/cold-2 -name .ninja_log | head -1)
awk 'NR>1 {printf "%6.1f %s\n", ($2-$1)/1000, $4}' $L | sort -rn > $OUT/f-ninja.txt
head -6 $OUT/f-ninja.txt; grep held $OUT/f-ninja.txt
