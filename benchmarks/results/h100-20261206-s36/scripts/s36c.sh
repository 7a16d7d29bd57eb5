#!/usr/bin/env bash
# Session 36, prepared for the next call (~450 s): on main with the paired tilings, the build's
# budget (benchmarks/build_time.py: the cold first import, per-file times, an edit of each file),
# the tests of directions at once (the review's two fixes, not yet GPU-run), then issue 21's rows:
# bench.py --plan cudnn and --plan cudnn-other.
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
bash benchmarks/device_env.sh > $OUT/c-env.txt 2>&1
timeout 300 python3 benchmarks/build_time.py --warm-runs 2 --out $OUT/c-build.json > $OUT/c-build.txt 2>&1
echo "build_time rc=$?"; grep -E "cold|critical|persistent_(forward|backward)_f32|ops.cpp" $OUT/c-build.txt | head -8
timeout 90 python3 -m pytest -q -n 4 -p no:cacheprovider tests/test_lstm_parity.py -k "not cpu" > $OUT/c-tests.txt 2>&1
echo "tests rc=$?"; tail -n 1 $OUT/c-tests.txt
timeout 100 python3 bench.py --plan cudnn --budget 0.5 --out $OUT > $OUT/c-plan-cudnn.txt 2>&1
echo "plan rc=$?"
grep -E "^bars:|^  OVER|^  met" $OUT/c-plan-cudnn.txt
timeout 130 python3 bench.py --plan cudnn-other --budget 0.5 --out $OUT > $OUT/c-plan-cudnn-other.txt 2>&1
echo "plan other rc=$?"
grep -E "^bars:|^  OVER" $OUT/c-plan-cudnn-other.txt
rm -f $OUT/*.png
