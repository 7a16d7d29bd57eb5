#!/usr/bin/env bash
# Session 39, call j: the 2-layer bidirectional fp32 row's kernels on main (bidi_timeline.py).
set -uo pipefail
HERE=$PWD/benchmarks/results/h100-20261206-s39/scripts
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
bash benchmarks/device_env.sh > $OUT/j-env.txt 2>&1
export PYTHONPATH=$PWD LLTM_JIT_CACHE_DIR=/tmp/cache
timeout 200 python3 $HERE/bidi_timeline.py main fwd > $OUT/j-timeline-fwd.txt 2>&1; echo "fwd rc=$?"
timeout 60 python3 $HERE/bidi_timeline.py main fwd+bwd > $OUT/j-timeline-fwdbwd.txt 2>&1; echo "fwd+bwd rc=$?"
grep -E "span| sum " $OUT/j-timeline-fwd.txt $OUT/j-timeline-fwdbwd.txt | cut -c1-150
