#!/usr/bin/env bash
# session 23 call a: where the float16 rows' persistent forward step goes: a call's time against
# its length (a fixed part and a part a step), and ncu's warp-stall samples of the tensor-core
# forward mapped to source lines (a copy of the tree built with -lineinfo)
set -uo pipefail
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 LLTM_JIT_CACHE_DIR=/tmp/lltm-cache
ROOT=$PWD; S=$ROOT/benchmarks/results/h200-20261203-s23/scripts
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
  python3 -c "import torch; print('torch', torch.__version__, 'CUDA', torch.version.cuda, 'cuDNN', torch.backends.cudnn.version())"
  git log --oneline -1; git status --short | head -40; which ncu nvdisasm cuobjdump; ncu --version | tail -1; } > $OUT/a-env.txt 2>&1
rm -rf /tmp/li /tmp/li-cache && mkdir /tmp/li && cp -r lltm_jit src /tmp/li/
sed -i 's/^NVCC_FLAGS = ("-O3",/NVCC_FLAGS = ("-O3", "-lineinfo",/' /tmp/li/lltm_jit/jit/spec.py
grep -c lineinfo /tmp/li/lltm_jit/jit/spec.py
(python3 -m lltm_jit build > $OUT/a-build.txt 2>&1; python3 -m lltm_jit info >> $OUT/a-build.txt 2>&1) &
(cd /tmp/li && PYTHONPATH=/tmp/li LLTM_JIT_CACHE_DIR=/tmp/li-cache python3 -m lltm_jit build > /tmp/li-build.txt 2>&1) &
wait
grep -E "built in" $OUT/a-build.txt | head -2; tail -2 /tmp/li-build.txt
timeout 200 python3 $S/sweep.py 8x256x512:float16 64x1024x1024:float16 128x512x512:float16 64x256x512:float32 \
  16x32x128:float32 > $OUT/a-sweep.txt 2>&1
grep -E "per step" $OUT/a-sweep.txt
# the cubins of the tensor-core forward, disassembled with their line info
mkdir -p /tmp/cubins && cd /tmp/cubins
for o in $(find /tmp/li-cache -name "tensor_core_forward_f16*.o"); do cuobjdump -xelf all $o > /dev/null 2>&1; done
for c in *.cubin; do nvdisasm -g -c $c; done > /tmp/disasm.txt 2>&1; ls /tmp/cubins | head; wc -l /tmp/disasm.txt
cd $ROOT
K="--kernel-name regex:tensor_core_forward_kernel --launch-skip 2 --launch-count 1"
for spec in "8 256 512 float16 256 small" "64 1024 1024 float16 64 large" "128 512 512 float16 64 mid"; do
  set -- $spec
  (cd /tmp/li && PYTHONPATH=/tmp/li LLTM_JIT_CACHE_DIR=/tmp/li-cache timeout 150 ncu $K --section SourceCounters \
    --section WarpStateStats --page source --print-source sass --csv python3 $S/one_forward.py $1 $2 $3 $4 $5 \
    > /tmp/ncu-$6.csv 2>&1)
  python3 $S/sass_lines.py /tmp/ncu-$6.csv /tmp/disasm.txt 40 > $OUT/a-lines-$6.txt 2>&1
  head -25 $OUT/a-lines-$6.txt
done
gzip -c /tmp/disasm.txt > $OUT/a-disasm.txt.gz
tar czf $OUT/a-ncu.tar.gz -C /tmp ncu-small.csv ncu-large.csv ncu-mid.csv
