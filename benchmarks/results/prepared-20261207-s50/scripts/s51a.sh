#!/usr/bin/env bash
# Prepared in session 50 (not run: no device machine started that session). The streamed backward
# (streamed-backward.patch over main fe973b6, src and tests: W_h's gate rows split over clusters
# of 4 consecutive tiles, each block's product streamed as the forward's, the partial sums through
# distributed shared memory; the default wherever the streamed forward is). Run on a copy of the
# tree, as the device has: it patches the tree in place, and keeps an unpatched copy for the A/B.
# In order of need: the cold build and info; backward_loop.cu (session 49's probe with session
# 50's variants 3-4: the cluster split's loop, n128 over k 768); compare_backward.py (the streamed
# backward against the step path's on the same saved forward); the streamed tests and the long
# sequences of test_sequence.py; benchmarks.ab, base main against the patched tree (a row forced
# streamed: 128x1024x1024 and 256x256x768 run per step unforced). ~6 min on an H100.
# Predicted: variant 3's loop as the forward's (6-8k cycles a step, variant 0 ~6.6k); every
# compare row "streamed" with errors of the half type's rounding (<= 0.01); 256x512x1024 bf16
# fwd+bwd ~0.80 of main (1 725 -> ~1 400 us: the backward ~7.6 us a step against ~12.8).
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
ROOT=$PWD; HERE=$ROOT/benchmarks/results/prepared-20261207-s50/scripts
bash benchmarks/device_env.sh > $OUT/a-env.txt 2>&1; head -2 $OUT/a-env.txt
rm -rf /tmp/base && mkdir /tmp/base && cp -r lltm_jit src /tmp/base/
patch -s -p1 < $HERE/streamed-backward.patch || exit 1
rm -rf /tmp/cache
({ time LLTM_JIT_CACHE_DIR=/tmp/cache timeout 200 python3 -c "import lltm_jit"; } > $OUT/a-build.txt 2>&1
 LLTM_JIT_CACHE_DIR=/tmp/cache python3 -m lltm_jit info >> $OUT/a-build.txt 2>&1) &
(cd /tmp/base && PYTHONPATH=/tmp/base LLTM_JIT_CACHE_DIR=/tmp/cache-base timeout 200 python3 -m lltm_jit build > /dev/null 2>&1) &
nvcc -O3 -gencode arch=compute_90a,code=sm_90a -o /tmp/backward_loop $HERE/backward_loop.cu && \
  timeout 60 /tmp/backward_loop > $OUT/a-loop.txt 2>&1
echo "backward_loop rc=$?"; cat $OUT/a-loop.txt
wait; grep -E "built in|^real|error" $OUT/a-build.txt | head
export LLTM_JIT_CACHE_DIR=/tmp/cache
timeout 90 python3 $HERE/compare_backward.py > $OUT/a-compare.txt 2>&1
rc=$?; echo "compare rc=$rc at ${SECONDS}s"; tail -n 24 $OUT/a-compare.txt
[ $rc -eq 124 ] && exit 1  # a hung kernel: the rest would hang too
timeout 200 python3 -m pytest -q -n 14 -p no:cacheprovider -k "streamed or long_sequence" \
  tests/test_sequence.py > $OUT/a-tests.txt 2>&1
echo "tests rc=$? at ${SECONDS}s"; grep -E "^(FAILED|ERROR)|passed|failed|Error" $OUT/a-tests.txt | tail -n 15
timeout 200 python3 -m benchmarks.ab --base /tmp/base --rounds 2 --env LLTM_JIT_SEQUENCE_KERNEL=streamed \
  --sizes 256x512x1024:bfloat16:dx,256x512x1024:float16:dx,128x1024x1024:bfloat16:dx,256x256x768:bfloat16:dx \
  > $OUT/a-ab.txt 2>&1
echo "ab rc=$? at ${SECONDS}s (base: main, new: the patched tree)"; sed -n '/^size/,$p' $OUT/a-ab.txt
