#!/usr/bin/env bash
# session 18 run b: resident clusters; the persistent kernels' device time and shape, clusters of 16, 8, none
set -uo pipefail
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 LLTM_JIT_CACHE_DIR=/tmp/lltm-cache
S=benchmarks/results/h200-20261203-s18/scripts
git log --oneline -1 > $OUT/b-env.txt; git status --short >> $OUT/b-env.txt
nvcc -arch=sm_90 -o /tmp/probe $S/probe.cu && /tmp/probe > $OUT/b-probe.txt 2>&1; cat $OUT/b-probe.txt
python3 -m lltm_jit build > $OUT/b-build.txt 2>&1; grep -E "built in" $OUT/b-build.txt | head -2
PYTHONPATH=$PWD:$PWD/tests timeout 200 python3 $S/kernels.py > $OUT/b-kernels.txt 2>&1; cat $OUT/b-kernels.txt | cut -c1-220
timeout 200 python3 -m benchmarks.ab --base 803d85e --rounds 1 --env LLTM_JIT_CLUSTERS=8 --env LLTM_JIT_CLUSTERS=0 --sizes 8x256x512:float16,64x256x512:bfloat16,128x512x512:float16,1024x256x256:bfloat16,16x32x128:bfloat16,40x8x512:bfloat16,12x8x330:bfloat16 > $OUT/b-ab.txt 2>&1
grep " us" $OUT/b-ab.txt
