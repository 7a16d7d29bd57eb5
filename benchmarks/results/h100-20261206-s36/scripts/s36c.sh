#!/usr/bin/env bash
# Session 36, prepared for the next call (~300 s): on main with the paired tilings, the cold first
# import in a fresh cache and its per-file times (issue 20's budget with the kernels of 16 rows),
# the tests of directions at once (the review's two fixes, not yet GPU-run), then issue 21's rows:
# bench.py --plan cudnn and --plan cudnn-other.
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
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
head -4 $OUT/c-ninja.txt; grep -E "persistent_(forward|backward)_f32" $OUT/c-ninja.txt
timeout 90 python3 -m pytest -q -n 4 -p no:cacheprovider tests/test_lstm_parity.py -k "not cpu" > $OUT/c-tests.txt 2>&1
echo "tests rc=$?"; tail -n 1 $OUT/c-tests.txt
timeout 100 python3 bench.py --plan cudnn --budget 0.5 --out $OUT > $OUT/c-plan-cudnn.txt 2>&1
echo "plan rc=$?"
grep -E "^bars:|^  OVER|^  met" $OUT/c-plan-cudnn.txt
timeout 130 python3 bench.py --plan cudnn-other --budget 0.5 --out $OUT > $OUT/c-plan-cudnn-other.txt 2>&1
echo "plan other rc=$?"
grep -E "^bars:|^  OVER" $OUT/c-plan-cudnn-other.txt
rm -f $OUT/*.png
