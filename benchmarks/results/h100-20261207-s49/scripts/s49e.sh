#!/usr/bin/env bash
# Session 49, call e: the forward step kernel reads part 0 of its product with its other loads
# and adds the other parts after them (call d's tree read the parts first, in a loop, and its
# TF32 forwards, which run one part, came out 1.02-1.07x main). The CUDA tests of the sequence op
# on the step path; benchmarks.ab, base main against the tree, 3 rounds. Predicted: TF32 forwards
# as main (0.98-1.02), float32's 0.93-0.97, fwd+bwd as call d where the backward splits.
# (Re-run on a copy of the tree, as the device has: this applies split-forward.patch, the
# forward's split, to the tree over split.patch.)
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
ROOT=$PWD; HERE=$ROOT/benchmarks/results/h100-20261207-s49/scripts
bash benchmarks/device_env.sh > $OUT/e-env.txt 2>&1; head -2 $OUT/e-env.txt
rm -rf /tmp/base && mkdir /tmp/base && cp -r lltm_jit src /tmp/base/
(cd /tmp/base && patch -s -R -p1 < $HERE/split.patch) || exit 1
patch -s -p1 < $HERE/split-forward.patch || exit 1
export LLTM_JIT_CACHE_DIR=/tmp/cache
(timeout 200 python3 -m lltm_jit build > /dev/null 2>&1) &
(cd /tmp/base && PYTHONPATH=/tmp/base LLTM_JIT_CACHE_DIR=/tmp/cache-base timeout 200 python3 -m lltm_jit build > /dev/null 2>&1) &
wait
timeout 150 python3 -m pytest -q -n 14 -p no:cacheprovider -k "step and not cpu" tests/test_sequence.py > $OUT/e-tests.txt 2>&1
echo "tests rc=$? at ${SECONDS}s"; grep -E "^(FAILED|ERROR)|passed|failed" $OUT/e-tests.txt | tail -n 12
timeout 300 python3 -m benchmarks.ab --base /tmp/base --rounds 3 \
  --sizes 256x512x1024:float32:dx,256x512x1024:tf32:dx,512x256x512:float32:dx,512x256x512:tf32:dx,128x1024x1024:bfloat16:dx,2048x128x256:bfloat16:dx,256x512x1024:bfloat16:dx \
  > $OUT/e-ab.txt 2>&1
echo "ab rc=$? at ${SECONDS}s (base: main, new: split)"; sed -n '/^size/,$p' $OUT/e-ab.txt
