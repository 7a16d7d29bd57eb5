#!/usr/bin/env bash
# Session 53, call c: the backward's split-K parts halved at each doubling of the batch past 256
# (calls a and b: main's 4 and 8 held up to batch 256; past it float32 at 512 x 256 x 512 gained
# 2.4% in 4 parts and 1% at 1024 x 256 x 256 in 2, bf16 1.5-3% in 2 at batch 512). Tree: that
# rule; base: main (HEAD, from base-s53/, made by `git archive HEAD lltm_jit src`). Then the
# step path's tests. Predicted: 0.97-0.99 on the batch-512 rows, ~0.99 at 1024 float32, 1.00 on
# the rest.
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
bash benchmarks/device_env.sh > $OUT/c-env.txt 2>&1; head -2 $OUT/c-env.txt
timeout 150 python3 -m pytest -q -p no:cacheprovider -k "step_path or parts or fallback" tests/test_sequence.py > $OUT/c-tests.txt 2>&1
echo "tests rc=$? at ${SECONDS}s"; tail -n 5 $OUT/c-tests.txt | grep -E "FAILED|ERROR|passed|failed"
timeout 360 python3 -m benchmarks.ab --base base-s53 --rounds 5 \
  --sizes 512x256x512:float32:dx,512x256x512:bfloat16:dx,384x256x512:bfloat16:dx,512x512x1024:bfloat16:dx,1024x256x256:float32:dx,256x512x1024:bfloat16:dx \
  > $OUT/c-ab.txt 2>&1
echo "ab rc=$? at ${SECONDS}s"
sed -n '/^size/,$p' $OUT/c-ab.txt
