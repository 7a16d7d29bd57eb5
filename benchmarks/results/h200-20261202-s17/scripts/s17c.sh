#!/usr/bin/env bash
# session 17 run c: the small size's host split; W_h^T contiguous for the backward's products
set -uo pipefail
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 LLTM_JIT_CACHE_DIR=/tmp/lltm-cache
python3 -m lltm_jit build > $OUT/c-build.txt 2>&1; grep -E "built in" $OUT/c-build.txt | head -2
python3 .ab/host_split.py > $OUT/c-host.txt 2>&1; cat $OUT/c-host.txt
timeout 200 python3 -m benchmarks.ab --base 41edd00 --rounds 2 --sizes 256x512x1024:tf32,512x256x512:tf32,512x512x1024:tf32,256x512x1024:float32 --env LLTM_JIT_WT=1 > $OUT/c-ab.txt 2>&1
grep " us" $OUT/c-ab.txt
