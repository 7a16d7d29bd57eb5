#!/usr/bin/env bash
# Session 53, call b, on the machine of call a (its /tmp/base: main's lltm_jit and src): the
# backward's parts at batches past 256, where main takes 1, in 2, 4 and 8 (split_parts halves a
# count whose slices of k would be under 256: 8 is 4 at state 512, and 4 and 8 are 2 at state 256).
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
patch -s -p1 < benchmarks/results/prepared-20261207-s52/scripts/parts-trial.patch || exit 1
timeout 500 python3 -m benchmarks.ab --base /tmp/base --rounds 3 \
  --sizes 1024x256x256:bfloat16:dx,512x256x512:bfloat16:dx,512x256x512:float32:dx,1024x256x256:float32:dx,512x512x1024:bfloat16:dx \
  --env LLTM_JIT_TRIAL_BACKWARD_PARTS=2 --env LLTM_JIT_TRIAL_BACKWARD_PARTS=4 --env LLTM_JIT_TRIAL_BACKWARD_PARTS=8 \
  > $OUT/b-ab.txt 2>&1
echo rc=$?; sed -n '/^size/,$p' $OUT/b-ab.txt
