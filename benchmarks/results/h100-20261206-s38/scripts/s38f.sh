#!/usr/bin/env bash
# Session 38, call f, on main: cuDNN's time at 1024x256x256 bf16 in three fresh processes (and
# ours beside it; scripts/cudnn_variance.py), then both cuDNN plans again on main (a second sample
# of every row after calls a and b).
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
HERE=$PWD/benchmarks/results/h100-20261206-s38/scripts
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
bash benchmarks/device_env.sh > $OUT/f-env.txt 2>&1
export LLTM_JIT_CACHE_DIR=/tmp/cache-f
python3 -c "import lltm_jit" > /dev/null 2>&1  # the build, outside the timed processes
for run in 1 2 3; do timeout 60 python3 $HERE/cudnn_variance.py run$run >> $OUT/f-cudnn.txt 2>&1; done
echo "cudnn rc=$?"; grep -v "^lltm_jit:" $OUT/f-cudnn.txt
for plan in cudnn cudnn-other; do
  timeout 140 python3 bench.py --plan $plan --budget 0.5 --out $OUT > $OUT/f-plan-$plan.txt 2>&1
  echo "plan $plan rc=$?"; grep -E "^bars:|^  OVER" $OUT/f-plan-$plan.txt
done
