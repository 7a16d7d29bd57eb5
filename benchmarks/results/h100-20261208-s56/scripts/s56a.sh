#!/usr/bin/env bash
# Session 56, call a, on any GPU (~6 min): the step kernels' parts loaded before they are added
# (kPartsInFlight at a time, where the loop of the runtime count waited on each in turn) and the
# backward's output gradient read in packs. The tree against base-s56/ (main's lltm_jit and src,
# made before the call: `mkdir base-s56 && git archive HEAD lltm_jit src | tar -x -C base-s56`):
# the CUDA tests of the sequence op, LSTM parity, ops, modules, autocast and the loader;
# benchmarks.ab over the step path's sizes, with v8-s56/ beside (the tree with the half types'
# backward in 8 parts up to batch 256, as float32's, made before the call: a copy of lltm_jit and
# src with max_backward_parts 8 for both and the half types' step kernel at 3 blocks, where 8 parts'
# registers fit) and pf-s56/ (the tree whose backward step kernel, after its stores, asks L2 to
# fetch step t - 1's saved gates, cell state and output gradient, which the product in between
# leaves time for); each tree's backward step kernel in a profile.
# Predicted: the tests pass; bf16 256x512x1024 (4 parts) the backward's step kernel 4.55 ->
# ~3.9 us, fwd+bwd 0.975-0.985 of main; float32 and TF32 there (8 parts) 0.97-0.99; 512x256x512
# bf16 (2 parts) 0.99-1.00; 1024x256x256 and 2048x128x256 bf16 (1 part) 1.00; forwards 1.00.
# v8: bf16 256x512x1024 1.00-1.02 of the tree (8 parts' 4 MB more each way through L2 against a
# product that fills more of the GPU; session 53 measured 8 slower when the parts were read in turn).
# pf: the step kernel ~0.3 us shorter than the tree's (2.5 MB a step from HBM), fwd+bwd 0.98-0.99.
# The trees as they ran: the tree is main (bc14df6) with parts-in-flight.patch applied; v8-s56/
# and pf-s56/ are copies of the tree's lltm_jit and src, with v8.patch and prefetch.patch applied
# inside them (`patch -p1`).
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
bash benchmarks/device_env.sh > $OUT/a-env.txt 2>&1; head -2 $OUT/a-env.txt
for tree in base-s56 v8-s56 pf-s56; do [ -d $tree/src ] || { echo "$tree/ is missing"; exit 1; }; done
rm -rf /tmp/cache-new /tmp/cache-base /tmp/cache-pf
{ time LLTM_JIT_CACHE_DIR=/tmp/cache-new python3 -c "import lltm_jit"; } > $OUT/a-build.txt 2>&1
LLTM_JIT_CACHE_DIR=/tmp/cache-new python3 -m lltm_jit info >> $OUT/a-build.txt 2>&1
grep -E "built in|^real" $OUT/a-build.txt
for tree in base pf; do
  PYTHONPATH=$PWD/$tree-s56 LLTM_JIT_CACHE_DIR=/tmp/cache-$tree python3 -c "import lltm_jit" > /tmp/$tree-build.txt 2>&1 &
done
LLTM_JIT_CACHE_DIR=/tmp/cache-new timeout 240 python3 -m pytest -q -n 14 -p no:cacheprovider -k "not cpu" \
  tests/test_sequence.py tests/test_lstm_parity.py tests/test_module.py tests/test_ops.py tests/test_amp.py \
  tests/test_loader.py > $OUT/a-tests.txt 2>&1
echo "tests rc=$? at ${SECONDS}s"; tail -n 15 $OUT/a-tests.txt | grep -E "FAILED|ERROR|passed|failed"
timeout 300 python3 -m benchmarks.ab --base base-s56 --base v8-s56 --base pf-s56 --rounds 3 \
  --sizes 256x512x1024:bfloat16:dx,256x512x1024:float32:dx,256x512x1024:tf32:dx,512x256x512:bfloat16:dx,1024x256x256:bfloat16:dx,2048x128x256:bfloat16:dx \
  > $OUT/a-ab.txt 2>&1
echo "ab rc=$? at ${SECONDS}s"
wait
TIMELINE=benchmarks/results/prepared-20261207-s54/scripts/beside_timeline.py
for tree in base new pf; do
  for size in 256x512x1024:bfloat16 256x512x1024:float32; do
    echo "== $tree $size" >> $OUT/a-timeline.txt
    if [ $tree = new ]; then path=$PWD; else path=$PWD/$tree-s56; fi
    PYTHONPATH=$path LLTM_JIT_CACHE_DIR=/tmp/cache-$tree timeout 60 python3 $TIMELINE $size 0 >> $OUT/a-timeline.txt 2>&1
  done
done
echo "timeline rc=$? at ${SECONDS}s"; grep -E "^==|step_" $OUT/a-timeline.txt
sed -n '/^size/,$p' $OUT/a-ab.txt
