#!/usr/bin/env bash
# Prepared in session 49 (not run): float32's step forward with its product in 2 parts over k
# (split-forward-kernel.patch over main c97d8b5), through a kernel of its own, so that the
# one-part step kernel stays main's to the instruction (session 49's calls d-e ran the parts' loop
# in the one kernel: float32's forwards 0.93-0.96, but the TF32 and half-type forwards, one part,
# 1.02-1.07). Run on a copy of the tree, as the device has: it patches the tree in place. The
# step path's CUDA tests (with the parts' graph replays), then benchmarks.ab, base main against
# the patched tree, 3 rounds. Predicted: float32 forwards 0.93-0.96 (256x512x1024, 512x256x512),
# TF32 and bf16 0.98-1.02; fwd+bwd the forward's gain. (Its probe of a streamed backward's loop,
# backward_loop.cu, moved to prepared-20261207-s50/, which runs it.)
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
ROOT=$PWD; HERE=$ROOT/benchmarks/results/prepared-20261207-s49/scripts
bash benchmarks/device_env.sh > $OUT/a-env.txt 2>&1; head -2 $OUT/a-env.txt
rm -rf /tmp/base && mkdir /tmp/base && cp -r lltm_jit src /tmp/base/
patch -s -p1 < $HERE/split-forward-kernel.patch || exit 1
export LLTM_JIT_CACHE_DIR=/tmp/cache
(timeout 200 python3 -m lltm_jit build > $OUT/a-build.txt 2>&1; echo "build rc=$?") &
(cd /tmp/base && PYTHONPATH=/tmp/base LLTM_JIT_CACHE_DIR=/tmp/cache-base timeout 200 python3 -m lltm_jit build > /dev/null 2>&1) &
wait; grep -E "built in" $OUT/a-build.txt
timeout 200 python3 -m pytest -q -n 14 -p no:cacheprovider -k "not cpu" tests/test_sequence.py > $OUT/a-tests.txt 2>&1
echo "tests rc=$? at ${SECONDS}s"; grep -E "^(FAILED|ERROR)|passed|failed" $OUT/a-tests.txt | tail -n 12
timeout 300 python3 -m benchmarks.ab --base /tmp/base --rounds 3 \
  --sizes 256x512x1024:float32:dx,512x256x512:float32:dx,256x512x1024:tf32:dx,512x256x512:tf32:dx,2048x128x256:bfloat16:dx,128x1024x1024:bfloat16:dx \
  > $OUT/a-ab.txt 2>&1
echo "ab rc=$? at ${SECONDS}s (base: main, new: the patch)"; sed -n '/^size/,$p' $OUT/a-ab.txt
