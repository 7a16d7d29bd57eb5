#!/usr/bin/env bash
# Session 43, call d: where the step goes in main and in the pipelined product (clock64 sums of a
# step's phases, printed by three blocks: probe-main.patch over main, probe-pipelined2.patch over
# the working tree), mma_rate.cu with its out-of-range read fixed, and main against cuDNN at
# 256x512x1024 in the half types.
set -uo pipefail
export PYTHONUNBUFFERED=1
ROOT=$PWD; HERE=$ROOT/benchmarks/results/h100-20261206-s43/scripts; S23=$ROOT/benchmarks/results/h200-20261203-s23/scripts
bash benchmarks/device_env.sh > $OUT/d-env.txt 2>&1; head -3 $OUT/d-env.txt
rm -rf /tmp/main /tmp/pm /tmp/pv && mkdir /tmp/main /tmp/pm /tmp/pv
cp -r lltm_jit src /tmp/main/ && (cd /tmp/main && patch -s -R -p1 < $HERE/pipelined2.patch) || exit 1
cp -r /tmp/main/lltm_jit /tmp/main/src /tmp/pm/ && (cd /tmp/pm && patch -s -p1 < $HERE/probe-main.patch) || exit 1
cp -r lltm_jit src /tmp/pv/ && (cd /tmp/pv && patch -s -p1 < $HERE/probe-pipelined2.patch) || exit 1
for d in pm pv; do
  echo "== $d" >> $OUT/d-probe.txt
  (cd /tmp/$d && PYTHONPATH=/tmp/$d LLTM_JIT_CACHE_DIR=/tmp/cache-$d timeout 120 python3 $S23/one_forward.py 256 512 1024 bfloat16 64) >> $OUT/d-probe.txt 2>&1
done
cat $OUT/d-probe.txt | grep -v "^lltm_jit"
(cd /tmp && nvcc -O3 -arch=sm_90a -o mma_rate $HERE/mma_rate.cu && timeout 60 ./mma_rate) > $OUT/d-mma-rate.txt 2>&1
echo "mma_rate rc=$?"; cat $OUT/d-mma-rate.txt
(cd /tmp/main && PYTHONPATH=/tmp/main:$ROOT LLTM_JIT_CACHE_DIR=/tmp/cache-main timeout 150 python3 $ROOT/bench.py --kind sequence \
  --sizes 256x512x1024 --dtypes bfloat16,float16 --backends lltm_jit,lstm --no-save --no-plot) > $OUT/d-bench.txt 2>&1
echo "bench rc=$?"; grep -E "fwd|lltm_jit |lstm  " $OUT/d-bench.txt | tail -12
