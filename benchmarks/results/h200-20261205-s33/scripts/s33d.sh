#!/usr/bin/env bash
# Session 33: ncu's stall samples by source line (session 23's method, s32d.sh without the plan)
# of the CUDA-core fp32 forward at 16x32x128 T = 64 (a block of one row reads all of W_h from
# shared memory a step: ~1 700 wavefronts, ~0.85 us, of the ~2.9 us a step it takes), the held
# fp16 forward at 8x256x512 T = 256, and the cluster backward at 8x256x512 T = 256.
set -uo pipefail
export PYTHONUNBUFFERED=1
ROOT=$PWD; S=$ROOT/benchmarks/results/h200-20261203-s23/scripts
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
rm -rf /tmp/li /tmp/li-cache && mkdir /tmp/li && cp -r lltm_jit src /tmp/li/
sed -i 's/^NVCC_FLAGS = ("-O3",/NVCC_FLAGS = ("-O3", "-lineinfo",/' /tmp/li/lltm_jit/jit/spec.py
grep -c lineinfo /tmp/li/lltm_jit/jit/spec.py
(cd /tmp/li && PYTHONPATH=/tmp/li LLTM_JIT_CACHE_DIR=/tmp/li-cache python3 -m lltm_jit build 2>&1 | grep "built in")
mkdir -p /tmp/cubins && cd /tmp/cubins
for o in $(find /tmp/li-cache -name "tensor_core_forward_f16_held*.o" -o -name "tensor_core_backward_f16_cluster*.o" \
    -o -name "persistent_forward_f32*.o"); do cuobjdump -xelf all $o > /dev/null 2>&1; done
for c in *.cubin; do nvdisasm -g -c $c; done > /tmp/disasm.txt 2>&1
cd $ROOT
sample() {  # name, kernel regex, script, its arguments
  local name=$1 kernel=$2 script=$3; shift 3
  (cd /tmp/li && PYTHONPATH=/tmp/li LLTM_JIT_CACHE_DIR=/tmp/li-cache timeout 100 ncu --kernel-name regex:$kernel \
    --launch-skip 2 --launch-count 1 --section SourceCounters --page source --print-source sass --csv \
    python3 $script "$@" > /tmp/ncu-$name.csv 2>&1)
  python3 $S/sass_lines.py /tmp/ncu-$name.csv /tmp/disasm.txt 40 > $OUT/d-stalls-$name.txt 2>&1
  echo "== $name"; head -14 $OUT/d-stalls-$name.txt
}
sample f32-16x32x128 persistent_forward_kernel $S/one_forward.py 16 32 128 float32 64
sample held8 tensor_core_forward_kernel $S/one_forward.py 8 256 512 float16 256
sample bwd-cluster8 tensor_core_backward_kernel $ROOT/benchmarks/results/h100-20261205-s32/scripts/one_backward.py \
  8 256 512 float16 256
