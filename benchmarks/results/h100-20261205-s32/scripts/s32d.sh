#!/usr/bin/env bash
# Prepared in session 32 (not run; for the next device call, on main, whose kernels are
# 8968f01's): ncu's stall samples by source line of the held
# float16 forward (session 23's method and scripts, as s28e.sh) at 8x256x512 T = 256 and
# 8x128x256 T = 64, whose update ("sums": ~1 300-1 650 cycles a step) waits on no load
# (b-phases.txt), and of the cluster backward at 8x256x512 T = 256, whose exchange spends ~2 500
# of its ~2 900 cycles a step storing into the other blocks; then, unless PLAN=0, issue 21's
# cuDNN plan on this card.
set -uo pipefail
export PYTHONUNBUFFERED=1
ROOT=$PWD; S=$ROOT/benchmarks/results/h200-20261203-s23/scripts
bash benchmarks/device_env.sh > $OUT/d-env.txt 2>&1
rm -rf /tmp/li /tmp/li-cache && mkdir /tmp/li && cp -r lltm_jit src /tmp/li/
sed -i 's/^NVCC_FLAGS = ("-O3",/NVCC_FLAGS = ("-O3", "-lineinfo",/' /tmp/li/lltm_jit/jit/spec.py
grep -c lineinfo /tmp/li/lltm_jit/jit/spec.py
[ "${PLAN:-1}" = 1 ] && (PYTHONPATH=$ROOT timeout 100 python3 -m lltm_jit build 2>&1 | grep "built in") &
(cd /tmp/li && PYTHONPATH=/tmp/li LLTM_JIT_CACHE_DIR=/tmp/li-cache python3 -m lltm_jit build 2>&1 | grep "built in")
mkdir -p /tmp/cubins && cd /tmp/cubins
for o in $(find /tmp/li-cache -name "tensor_core_forward_f16_held*.o" -o -name "tensor_core_backward_f16_cluster*.o"); do cuobjdump -xelf all $o > /dev/null 2>&1; done
for c in *.cubin; do nvdisasm -g -c $c; done > /tmp/disasm.txt 2>&1
cd $ROOT
K="--kernel-name regex:tensor_core_forward_kernel --launch-skip 2 --launch-count 1"
for spec in "8 256 512 float16 256 held8" "8 128 256 float16 64 held4"; do
  set -- $spec
  (cd /tmp/li && PYTHONPATH=/tmp/li LLTM_JIT_CACHE_DIR=/tmp/li-cache timeout 100 ncu $K --section SourceCounters \
    --page source --print-source sass --csv python3 $S/one_forward.py $1 $2 $3 $4 $5 > /tmp/ncu-$6.csv 2>&1)
  python3 $S/sass_lines.py /tmp/ncu-$6.csv /tmp/disasm.txt 40 > $OUT/d-stalls-$6.txt 2>&1
  head -14 $OUT/d-stalls-$6.txt
done
(cd /tmp/li && PYTHONPATH=/tmp/li LLTM_JIT_CACHE_DIR=/tmp/li-cache timeout 100 ncu \
  --kernel-name regex:tensor_core_backward_kernel --launch-skip 2 --launch-count 1 --section SourceCounters \
  --page source --print-source sass --csv python3 $ROOT/benchmarks/results/h100-20261205-s32/scripts/one_backward.py \
  8 256 512 float16 256 > /tmp/ncu-bwd.csv 2>&1)
python3 $S/sass_lines.py /tmp/ncu-bwd.csv /tmp/disasm.txt 40 > $OUT/d-stalls-bwd-cluster8.txt 2>&1
head -14 $OUT/d-stalls-bwd-cluster8.txt
wait
[ "${PLAN:-1}" = 1 ] || exit 0
export PYTHONPATH=$ROOT
timeout 220 python3 bench.py --plan cudnn --budget 0.5 --out $OUT > $OUT/d-plan-cudnn.txt 2>&1
echo "plan rc=$?"
grep -E "^bars:|^  OVER|met" $OUT/d-plan-cudnn.txt | head -30
rm -f $OUT/*.png
