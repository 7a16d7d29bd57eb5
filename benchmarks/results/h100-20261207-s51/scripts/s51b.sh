#!/usr/bin/env bash
# Session 51, call b: the streamed backward (prepared-20261207-s50's patch) in phases, and the
# clusters the GPU holds at once. Call a found it correct but slower where forced (128x1024x1024
# fwd+bwd 1.123 of main) and never resident at 256x1024 (per step there). ~2 min.
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
HERE=$PWD/benchmarks/results/h100-20261207-s51/scripts
bash benchmarks/device_env.sh > $OUT/b-env.txt 2>&1; head -2 $OUT/b-env.txt
nvcc -O3 -arch=sm_90a -o /tmp/clusters $HERE/clusters.cu && /tmp/clusters | tee $OUT/b-clusters.txt
patch -s -p1 < benchmarks/results/prepared-20261207-s50/scripts/streamed-backward.patch || exit 1
python3 $HERE/probe_backward.py src/tensor_core_streamed_backward.cuh || exit 1
export LLTM_JIT_CACHE_DIR=/tmp/cache-probe
timeout 200 python3 -c "import lltm_jit" 2>&1 | tail -2
timeout 200 python3 $HERE/run_probe.py streamed 2>&1 | grep -v "^probe block.*T 0)" > $OUT/b-probe.txt
echo "probe rc=$? at ${SECONDS}s"; grep -A8 "backward 1" $OUT/b-probe.txt | grep -v Warn | head -60
