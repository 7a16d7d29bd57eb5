#!/usr/bin/env bash
# session 19 run b: where the fp32 CUDA-core persistent kernels' steps go at 64x256x512 (ncu's warp
# states and per-instruction stall samples), then every test, one line each
set -uo pipefail
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 LLTM_JIT_CACHE_DIR=/tmp/lltm-cache
S=benchmarks/results/h200-20261203-s19/scripts
{ date -u; git log --oneline -1; git status --short | head -40; } > $OUT/b-env.txt 2>&1
python3 -m lltm_jit build > $OUT/b-build.txt 2>&1; grep -E "built in" $OUT/b-build.txt | head -2
K="--kernel-name regex:persistent_(forward|backward)_kernel --launch-skip 2 --launch-count 2"
PYTHONPATH=$PWD:$PWD/tests timeout 100 ncu $K --section WarpStateStats --section SchedulerStats --section LaunchStats \
  --section SpeedOfLight python3 $S/one_call.py 64 256 512 float32 > $OUT/b-ncu.txt 2>&1
PYTHONPATH=$PWD:$PWD/tests timeout 100 ncu $K --section SourceCounters --page source --print-source sass --csv \
  python3 $S/one_call.py 64 256 512 float32 > /tmp/sass.csv 2>&1
python3 $S/sass_top.py /tmp/sass.csv 40 > $OUT/b-sass.txt 2>&1
grep -E "persistent_|Duration|Warp Cycles Per Issued|Eligible Warps|Stall|Threads|Registers" $OUT/b-ncu.txt | head -40
head -3 $OUT/b-sass.txt
timeout 380 python3 -m pytest -v -p no:cacheprovider -n 12 --timeout 100 tests > $OUT/b-tests.txt 2>&1; echo "tests rc=$?"
grep -E "FAILED|ERROR|Timeout" $OUT/b-tests.txt | grep -v "^\[gw[0-9]*\] PASSED" | head -20 | cut -c1-300
tail -3 $OUT/b-tests.txt | cut -c1-300
