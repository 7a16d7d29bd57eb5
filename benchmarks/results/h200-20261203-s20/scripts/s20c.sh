#!/usr/bin/env bash
# session 20 run c: b's A/B again with a base the device's copy holds (the session's first commit,
# whose step kernels are the old ones: the sizes here run the per-step path, which the fp32 lanes
# do not touch), then the peak-memory test
set -uo pipefail
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 LLTM_JIT_CACHE_DIR=/tmp/lltm-cache
{ date -u; git log --oneline -1; git status --short | head -40; } > $OUT/c-env.txt 2>&1
timeout 75 python3 -m benchmarks.ab --base a1ab279 --rounds 1 --sizes 256x512x1024:bfloat16,256x512x1024:float32 > $OUT/c-ab.txt 2>&1
grep " us" $OUT/c-ab.txt
python3 -m lltm_jit build > $OUT/c-build.txt 2>&1; grep -E "built in" $OUT/c-build.txt | head -1
timeout 60 python3 -m pytest -q -rfE -p no:cacheprovider -k peak_memory tests/test_sequence.py > $OUT/c-tests.txt 2>&1; echo "alone rc=$?"
grep -E "FAILED|ERROR|passed|failed|^E " $OUT/c-tests.txt | tail -12 | cut -c1-250
