#!/usr/bin/env bash
# Session 37, call b: where the paired forward of 16 rows (64x256x512 fp32: 782 us alone against
# 516 for 8 rows, session 36) spends its steps. (1) benchmarks.ab: main against two variants,
# lanes4.patch (the paired forward's 16 rows with 4 lanes a column and 2 slices, not 2 and 4)
# and gather8.patch (its gather of h in one round of 8 loads in flight, not two of 4);
# (2) benchmarks.stages on main, paired and not; (3) ncu's stall samples by source line of both
# forwards (session 33's method).
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
ROOT=$PWD; HERE=$ROOT/benchmarks/results/h100-20261206-s37/scripts; S23=$ROOT/benchmarks/results/h200-20261203-s23/scripts
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
bash benchmarks/device_env.sh > $OUT/b-env.txt 2>&1
for v in lanes4 gather8; do
  rm -rf /tmp/$v && mkdir /tmp/$v && cp -r lltm_jit src benchmarks /tmp/$v/ && (cd /tmp/$v && patch -p1 -s < $HERE/$v.patch)
done
SIZES=64x256x512:float32:paired,64x256x512:float32,32x128x256:float32:paired
(cd /tmp/lanes4 && PYTHONPATH=/tmp/lanes4 timeout 200 python3 -m benchmarks.ab --base $ROOT --base /tmp/gather8 \
  --sizes $SIZES --rounds 2) > $OUT/b-ab.txt 2>&1
echo "ab rc=$?"; tail -n 7 $OUT/b-ab.txt
timeout 200 python3 -m benchmarks.stages --sizes 64x256x512:float32:paired,64x256x512:float32 --rounds 2 \
  > $OUT/b-stages.txt 2>&1
echo "stages rc=$?"; tail -n 17 $OUT/b-stages.txt
rm -rf /tmp/li /tmp/li-cache && mkdir /tmp/li && cp -r lltm_jit src /tmp/li/
sed -i 's/^NVCC_FLAGS = ("-O3",/NVCC_FLAGS = ("-O3", "-lineinfo",/' /tmp/li/lltm_jit/jit/spec.py
(cd /tmp/li && PYTHONPATH=/tmp/li LLTM_JIT_CACHE_DIR=/tmp/li-cache python3 -m lltm_jit build 2>&1 | grep "built in")
mkdir -p /tmp/cubins && cd /tmp/cubins
for o in $(find /tmp/li-cache -name "persistent_forward_f32*.o"); do cuobjdump -xelf all $o > /dev/null 2>&1; done
for c in *.cubin; do nvdisasm -g -c $c; done > /tmp/disasm.txt 2>&1
cd $ROOT
sample() {  # name, kernel regex, script, its arguments
  local name=$1 kernel=$2 script=$3; shift 3
  (cd /tmp/li && PYTHONPATH=/tmp/li LLTM_JIT_CACHE_DIR=/tmp/li-cache timeout 100 ncu --kernel-name regex:$kernel \
    --launch-skip 2 --launch-count 1 --section SourceCounters \
    --page source --print-source sass --csv python3 $script "$@" > /tmp/ncu-$name.csv 2>&1)
  python3 $S23/sass_lines.py /tmp/ncu-$name.csv /tmp/disasm.txt 40 > $OUT/b-stalls-$name.txt 2>&1
  echo "== $name"; head -24 $OUT/b-stalls-$name.txt
}
sample paired16 persistent_forward_kernel $S23/one_forward.py 64 256 512 float32 64 paired
sample rows8 persistent_forward_kernel $S23/one_forward.py 64 256 512 float32 64
