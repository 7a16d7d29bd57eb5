#!/usr/bin/env bash
# Session 49, call b, on main 20623f6: (1) the step path's per-step products alone (products.py:
# cuBLAS as torch calls it, float outputs, split over k; then through cuBLASLt, torch's
# heuristic); (2) the SS streamed forward's step split into phases (session 43's probe_phases.py
# and probe_ss.py: the group's wait, the product with its copies' waits, barriers and wgmma waits,
# the epilogue, the tail), three blocks, at 256x512x1024 in bf16 and fp16 and at 128x512x1024
# (streamed forced).
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
ROOT=$PWD; HERE=$ROOT/benchmarks/results/h100-20261207-s49/scripts
S43=$ROOT/benchmarks/results/h100-20261206-s43/scripts; S23=$ROOT/benchmarks/results/h200-20261203-s23/scripts
bash benchmarks/device_env.sh > $OUT/b-env.txt 2>&1; head -2 $OUT/b-env.txt
rm -rf /tmp/probe && mkdir /tmp/probe && cp -r lltm_jit src /tmp/probe/
(cd /tmp/probe && python3 $S43/probe_phases.py src/tensor_core_streamed.cuh && python3 $HERE/probe_ss.py src/tensor_core_streamed.cuh) || exit 1
(cd /tmp/probe && PYTHONPATH=/tmp/probe LLTM_JIT_CACHE_DIR=/tmp/cache-probe timeout 200 python3 -m lltm_jit build > $OUT/b-build-probe.txt 2>&1) &
timeout 150 python3 $HERE/products.py > $OUT/b-products.txt 2>&1; echo "products rc=$? at ${SECONDS}s"
timeout 150 python3 $HERE/products.py lt > $OUT/b-products-lt.txt 2>&1; echo "lt rc=$? at ${SECONDS}s"
wait; grep -E "built in" $OUT/b-build-probe.txt
for args in "256 512 1024 bfloat16 64" "256 512 1024 float16 64"; do
  echo "== $args" >> $OUT/b-probe.txt
  (cd /tmp/probe && PYTHONPATH=/tmp/probe LLTM_JIT_CACHE_DIR=/tmp/cache-probe timeout 60 python3 $S23/one_forward.py $args) 2>&1 | grep probe >> $OUT/b-probe.txt
done
echo "== 128 512 1024 bfloat16 64 (streamed forced)" >> $OUT/b-probe.txt
(cd /tmp/probe && PYTHONPATH=/tmp/probe LLTM_JIT_CACHE_DIR=/tmp/cache-probe LLTM_JIT_SEQUENCE_KERNEL=streamed \
  timeout 60 python3 $S23/one_forward.py 128 512 1024 bfloat16 64) 2>&1 | grep probe >> $OUT/b-probe.txt
cat $OUT/b-products.txt $OUT/b-products-lt.txt | cut -c1-220
sed 's/per step cycles: //' $OUT/b-probe.txt
