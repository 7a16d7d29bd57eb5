#!/usr/bin/env bash
# Session 38, call c, on main b47936c: where the host's time goes in the 16x32x128 fp32 row's
# fwd+bwd (bench.py's 628 us against the op's 327 in benchmarks.ab: host-bound), for ours and
# cuDNN's (scripts/host_profile.py); the traces saved under $OUT.
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
HERE=$PWD/benchmarks/results/h100-20261206-s38/scripts
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
bash benchmarks/device_env.sh > $OUT/c-env.txt 2>&1
LLTM_JIT_CACHE_DIR=/tmp/cache-c timeout 200 python3 $HERE/host_profile.py > $OUT/c-host.txt 2>&1
echo "rc=$?"; head -8 $OUT/c-host.txt
cp /tmp/trace-*.json $OUT/ 2>/dev/null; gzip -f $OUT/trace-*.json
