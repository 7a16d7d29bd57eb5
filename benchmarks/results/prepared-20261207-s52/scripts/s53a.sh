#!/usr/bin/env bash
# Prepared in session 52 (not run): how many parts the step path's split-K products take. Session
# 52's profile of a 256x512x1024 bf16 training step (results/h100-20261207-s52/a-profile.txt) puts
# 624 us of the backward's ~975 in its step loop: cuBLAS's d_gates W_h in 4 parts (5.5 us a step)
# and step_backward_kernel (4.3 us a step), which reads the 4 parts' float sums (4 MB a step, from
# L2) as well as the saved gates and cells. parts-trial.patch reads the parts' count from
# LLTM_JIT_TRIAL_BACKWARD_PARTS (the backward, any dtype and batch) and LLTM_JIT_TRIAL_FORWARD_PARTS
# (float32's forward; TF32's too where set), a knob for this trial alone. Without them the patched
# tree is main (its row against base gives the spread). Runs on a copy of the tree, as the device
# has: it patches the tree in place and keeps an unpatched copy. ~4.5 min.
# Predicted: 2 parts in the half types' backward at batch 256 trade ~1 us more of product for ~0.7
# less of the step kernel: within 2% either way; 8 slower (session 49 chose 4 there); float32's
# forward in 4 parts 0.97-1.0 of 2.
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
ROOT=$PWD; HERE=$ROOT/benchmarks/results/prepared-20261207-s52/scripts
bash benchmarks/device_env.sh > $OUT/a-env.txt 2>&1; head -2 $OUT/a-env.txt
rm -rf /tmp/base && mkdir /tmp/base && cp -r lltm_jit src /tmp/base/
patch -s -p1 < $HERE/parts-trial.patch || exit 1
timeout 420 python3 -m benchmarks.ab --base /tmp/base --rounds 3 \
  --sizes 256x512x1024:bfloat16:dx,256x512x1024:float16:dx,128x1024x1024:bfloat16:dx,256x512x1024:float32:dx,512x256x512:float32:dx,256x512x1024:tf32:dx \
  --env LLTM_JIT_TRIAL_BACKWARD_PARTS=2 --env LLTM_JIT_TRIAL_BACKWARD_PARTS=8 --env LLTM_JIT_TRIAL_FORWARD_PARTS=4 \
  > $OUT/a-ab.txt 2>&1
echo "ab rc=$? at ${SECONDS}s (base: main; tree: the patch, unset; then each variable's row)"
sed -n '/^size/,$p' $OUT/a-ab.txt
