#!/usr/bin/env bash
# Session 52, call c: main dea68c4 with epilogue.patch (session 51) and split-forward-kernel.patch
# (session 49) applied, the tree as committed after it, against dea68c4 itself (base-s52/, a copy
# of its lltm_jit and src made before the call: `git archive dea68c4 lltm_jit src | tar -x -C
# base-s52`). Calls a and b ran the patches one at a time: the streamed forwards
# 0.979-0.999 of main, float32's forwards 0.920-0.961, but 2048x128x256 bf16's forward 1.025 and
# 128x1024x1024 bf16's fwd+bwd 1.021, where neither patch changes a kernel that runs: 5 rounds
# to tell that from the spread. The step path's CUDA tests first.
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
bash benchmarks/device_env.sh > $OUT/c-env.txt 2>&1; head -2 $OUT/c-env.txt
rm -rf /tmp/base && cp -r base-s52 /tmp/base
export LLTM_JIT_CACHE_DIR=/tmp/cache-new
(timeout 200 python3 -m lltm_jit build > $OUT/c-build.txt 2>&1; echo "build rc=$?") &
(cd /tmp/base && PYTHONPATH=/tmp/base LLTM_JIT_CACHE_DIR=/tmp/cache-base timeout 200 python3 -m lltm_jit build > /dev/null 2>&1) &
wait; grep -E "built in" $OUT/c-build.txt
timeout 200 python3 -m pytest -q -n 14 -p no:cacheprovider -k "not cpu" tests/test_sequence.py > $OUT/c-tests.txt 2>&1
echo "tests rc=$? at ${SECONDS}s"; grep -E "^(FAILED|ERROR)|passed|failed" $OUT/c-tests.txt | tail -n 12
timeout 330 python3 -m benchmarks.ab --base /tmp/base --rounds 5 \
  --sizes 2048x128x256:bfloat16:dx,128x1024x1024:bfloat16:dx,256x512x1024:bfloat16:dx,256x512x1024:float16:dx,256x512x1024:float32:dx,512x256x512:float32:dx \
  > $OUT/c-ab.txt 2>&1
echo "ab rc=$? at ${SECONDS}s (base: dea68c4, new: both patches)"; sed -n '/^size/,$p' $OUT/c-ab.txt
