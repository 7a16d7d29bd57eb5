#!/usr/bin/env bash
# Session 28's sixth call, on main (f22378c): the float16 forwards' stall samples by source line
# now (session 23's method and scripts: a -lineinfo build in a copy, ncu's SourceCounters of the
# third launch, sass_lines.py), for the next session's work on the rows still over their bar:
# 64x1024x1024 (T = 64; its forward 0.76 of cuDNN, bar 0.75, since the shared gather) and
# 8x256x512 (T = 256; 1.70).
set -uo pipefail
export PYTHONUNBUFFERED=1
ROOT=$PWD; S=$ROOT/benchmarks/results/h200-20261203-s23/scripts
bash benchmarks/device_env.sh > $OUT/g-env.txt 2>&1
rm -rf /tmp/li /tmp/li-cache && mkdir /tmp/li && cp -r lltm_jit src /tmp/li/
sed -i 's/^NVCC_FLAGS = ("-O3",/NVCC_FLAGS = ("-O3", "-lineinfo",/' /tmp/li/lltm_jit/jit/spec.py
grep -c lineinfo /tmp/li/lltm_jit/jit/spec.py
(cd /tmp/li && PYTHONPATH=/tmp/li LLTM_JIT_CACHE_DIR=/tmp/li-cache python3 -m lltm_jit build 2>&1 | grep "built in")
mkdir -p /tmp/cubins && cd /tmp/cubins
for o in $(find /tmp/li-cache -name "tensor_core_forward_f16*.o"); do cuobjdump -xelf all $o > /dev/null 2>&1; done
for c in *.cubin; do nvdisasm -g -c $c; done > /tmp/disasm.txt 2>&1
cd $ROOT
K="--kernel-name regex:tensor_core_forward_kernel --launch-skip 2 --launch-count 1"
for spec in "64 1024 1024 float16 64 large" "8 256 512 float16 256 small"; do
  set -- $spec
  (cd /tmp/li && PYTHONPATH=/tmp/li LLTM_JIT_CACHE_DIR=/tmp/li-cache timeout 150 ncu $K --section SourceCounters \
    --page source --print-source sass --csv python3 $S/one_forward.py $1 $2 $3 $4 $5 > /tmp/ncu-$6.csv 2>&1)
  python3 $S/sass_lines.py /tmp/ncu-$6.csv /tmp/disasm.txt 40 > $OUT/g-stalls-$6.txt 2>&1
  head -16 $OUT/g-stalls-$6.txt
done
