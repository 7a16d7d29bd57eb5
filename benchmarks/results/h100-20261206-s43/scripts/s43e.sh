#!/usr/bin/env bash
# Session 43, call e: the pipelined product with the next chunk's first loads after the second k
# tile's mma's (after-second.patch over pipelined2.patch over main): in pipelined2's SASS those
# loads share a scoreboard with the second tile's, so its mma's waited for them (ptxas has six).
# The step's phases (probe_phases.py) and benchmarks.ab against main at 256x512x1024 bf16.
set -uo pipefail
export PYTHONUNBUFFERED=1
ROOT=$PWD; HERE=$ROOT/benchmarks/results/h100-20261206-s43/scripts; S23=$ROOT/benchmarks/results/h200-20261203-s23/scripts
bash benchmarks/device_env.sh > $OUT/e-env.txt 2>&1; head -2 $OUT/e-env.txt
rm -rf /tmp/as /tmp/asp && mkdir /tmp/as && cp -r lltm_jit src /tmp/as/
(cd /tmp/as && patch -s -p1 < $HERE/pipelined2.patch && patch -s -p1 < $HERE/after-second.patch) || exit 1
cp -r /tmp/as /tmp/asp && (cd /tmp/asp && python3 $HERE/probe_phases.py src/tensor_core_streamed.cuh) || exit 1
(cd /tmp/asp && PYTHONPATH=/tmp/asp LLTM_JIT_CACHE_DIR=/tmp/cache-asp timeout 60 python3 $S23/one_forward.py 256 512 1024 bfloat16 64) > $OUT/e-probe.txt 2>&1
grep probe $OUT/e-probe.txt
PYTHONPATH=$ROOT timeout 140 python3 -m benchmarks.ab --base /tmp/as --rounds 2 --sizes 256x512x1024:bfloat16 > $OUT/e-ab.txt 2>&1
echo "ab rc=$?"; sed -n '/^size/,$p' $OUT/e-ab.txt
