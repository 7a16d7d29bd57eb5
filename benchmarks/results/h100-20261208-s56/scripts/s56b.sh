#!/usr/bin/env bash
# Session 56, call b, on main (~7 min on an H200, ~2 min otherwise). On an H200, the record that
# sessions 35-56 could not make: s49a.sh (the cold build, the CUDA tests, the cuDNN plan in three
# processes judged together, --plan cudnn-other) and the H200's cluster count. On any other GPU,
# main's step path with the test of the output gradient's layouts (which ran on the device only
# with session 56's trial patch), then the step path's other CUDA tests; `s56b.sh tests` runs that
# on any GPU.
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
if [ "${1:-}" != tests ] && nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  bash benchmarks/results/h100-20261207-s49/scripts/s49a.sh
  nvcc -O3 -arch=sm_90a -o /tmp/clusters benchmarks/results/h100-20261207-s51/scripts/clusters.cu &&
    /tmp/clusters > $OUT/a-clusters.txt 2>&1
  echo "clusters rc=$?"; tail -n 8 $OUT/a-clusters.txt
else
  bash benchmarks/device_env.sh > $OUT/b-env.txt 2>&1; head -2 $OUT/b-env.txt
  export LLTM_JIT_CACHE_DIR=/tmp/cache
  timeout 200 python3 -m pytest -q -n 8 -p no:cacheprovider tests/test_sequence.py \
    -k "(any_layout or step_path or parts or lengths) and not cpu" > $OUT/b-tests.txt 2>&1
  echo "tests rc=$? at ${SECONDS}s"; tail -n 5 $OUT/b-tests.txt | grep -E "FAILED|ERROR|passed|failed"
fi
