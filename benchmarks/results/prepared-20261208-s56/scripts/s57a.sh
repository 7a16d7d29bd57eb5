#!/usr/bin/env bash
# Prepared in session 56 (not run), for any GPU of sm_90 (~1 min): fused.cu, the backward's step
# at 256 x 1024 bf16 as one kernel (a split-K product whose parts meet in a cluster's shared
# memory, the cells in its epilogue) against session 55's replica of the step path. Its header
# says what each variant is and what was predicted. Run from the repository's root.
set -uo pipefail
HERE=benchmarks/results/prepared-20261208-s56/scripts
bash benchmarks/device_env.sh > $OUT/a-env.txt 2>&1; head -2 $OUT/a-env.txt
NV=$(python3 -c "import nvidia, os; print(os.path.join(list(nvidia.__path__)[0], 'cu13'))")
{ nvcc -O3 -arch=sm_90a -Xptxas -v -o /tmp/fused $HERE/fused.cu -lcublas ||
  nvcc -O3 -arch=sm_90a -Xptxas -v -I$NV/include -L$NV/lib -Xlinker -rpath=$NV/lib -o /tmp/fused \
    $HERE/fused.cu -l:libcublas.so.13 -l:libcublasLt.so.13; } > $OUT/a-build.txt 2>&1
echo "build rc=$?"; grep -E "error|registers|spill" $OUT/a-build.txt | head -8
LD_LIBRARY_PATH=$NV/lib:${LD_LIBRARY_PATH:-} timeout 120 /tmp/fused > $OUT/a-fused.txt 2>&1
echo "fused rc=$?"; cat $OUT/a-fused.txt
