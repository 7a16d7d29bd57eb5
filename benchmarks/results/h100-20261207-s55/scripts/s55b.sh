#!/usr/bin/env bash
# Session 55, call d, on any GPU (~4 min): programmatic dependent launch (PDL) of the step path's
# step kernels. First pdl.cu, outside the package: the backward's step at 256 x 1024 bf16 (cuBLAS's
# product in 4 parts, then an elementwise kernel of the step kernel's traffic) in a CUDA graph,
# plain and as a dependent. Then the tree, main with pdl-steps.patch applied before the call (its
# step kernels dependents of the products before them, but each period's first;
# LLTM_JIT_STEP_PDL=0 launches them plainly), against base-s55/
# (main's lltm_jit and src, made before the call: `mkdir base-s55 && git archive HEAD lltm_jit src
# | tar -x -C base-s55`): the step path's CUDA tests, benchmarks.ab, and one call's kernels.
# Predicted: pdl.cu's variants equal bit for bit; plain ~10.5 us a step, pdl 0.3-1.0 us less (the
# kernel's launch and its loads of the saved gates, cells and output gradient under the product's
# tail); pdl+trig as pdl unless cuBLAS launches its kernels as dependents. The tree: tests pass;
# 256x512x1024 bf16 fwd+bwd 0.97-0.99 of main (the backward's loop ~685 us, 0.3-1.0 us of ~10.8
# a step), TF32 0.98-1.00, the per-step forwards (2048x128x256 bf16, TF32) 0.98-1.00;
# LLTM_JIT_STEP_PDL=0 1.00.
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
HERE=$PWD/benchmarks/results/h100-20261207-s55/scripts
bash benchmarks/device_env.sh > $OUT/d-env.txt 2>&1; head -2 $OUT/d-env.txt
[ -d base-s55/src ] || { echo 'base-s55/ is missing'; exit 1; }
NV=$(python3 -c "import nvidia, os; print(os.path.join(list(nvidia.__path__)[0], 'cu13'))")
{ nvcc -O3 -arch=sm_90a -o /tmp/pdl $HERE/pdl.cu -lcublas ||
  nvcc -O3 -arch=sm_90a -I$NV/include -L$NV/lib -Xlinker -rpath=$NV/lib -o /tmp/pdl $HERE/pdl.cu \
    -l:libcublas.so.13 -l:libcublasLt.so.13; } > $OUT/d-pdl.txt 2>&1
echo "pdl build rc=$?"
LD_LIBRARY_PATH=$NV/lib:${LD_LIBRARY_PATH:-} timeout 100 /tmp/pdl >> $OUT/d-pdl.txt 2>&1
echo "pdl rc=$?"; sed -n '/ parts$/,$p' $OUT/d-pdl.txt
export LLTM_JIT_CACHE_DIR=/tmp/cache-new
timeout 100 python3 -m pytest -q -n 8 -p no:cacheprovider tests/test_sequence.py \
  -k "(step_path or parts or lengths or graph) and not cpu and not gradcheck" > $OUT/d-tests.txt 2>&1
echo "tests rc=$? at ${SECONDS}s"; tail -n 5 $OUT/d-tests.txt | grep -E "FAILED|ERROR|passed|failed"
unset LLTM_JIT_CACHE_DIR
timeout 200 python3 -m benchmarks.ab --base base-s55 --rounds 3 --env LLTM_JIT_STEP_PDL=0 \
  --sizes 256x512x1024:bfloat16:dx,256x512x1024:tf32:dx,2048x128x256:bfloat16:dx \
  > $OUT/d-ab.txt 2>&1
echo "ab rc=$? at ${SECONDS}s"; sed -n '/^size/,$p' $OUT/d-ab.txt
export LLTM_JIT_CACHE_DIR=/tmp/cache-new
for pdl in 1 0; do
  echo "== LLTM_JIT_STEP_PDL=$pdl" >> $OUT/d-timeline.txt
  LLTM_JIT_STEP_PDL=$pdl timeout 30 python3 \
    benchmarks/results/prepared-20261207-s54/scripts/beside_timeline.py 256x512x1024:bfloat16 0 \
    >> $OUT/d-timeline.txt 2>&1
done
echo "timeline rc=$? at ${SECONDS}s"; grep -E "^==|step_" $OUT/d-timeline.txt
