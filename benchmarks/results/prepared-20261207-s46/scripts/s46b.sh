#!/usr/bin/env bash
# Session 46, call b, on main: the same as session 40's call e (s40e.sh), for the README's table and the
# issue's bars (the GPU is named first): the CUDA tests of the sequence op, ops, modules and autocast; bench.py
# --plan cudnn in two processes, judged together, and --plan cudnn-other. (The device returns 8
# files at most: the plans' logs go into one file.)
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD LLTM_JIT_CACHE_DIR=/tmp/cache
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
bash benchmarks/device_env.sh > $OUT/b-env.txt 2>&1
timeout 220 python3 -m pytest -q -n 14 -p no:cacheprovider -k "not cpu" tests/test_sequence.py tests/test_lstm_parity.py \
  tests/test_amp.py tests/test_module.py tests/test_ops.py > $OUT/b-tests.txt 2>&1
echo "tests rc=$?"; tail -n 15 $OUT/b-tests.txt | grep -E "FAILED|passed|failed"
for run in 1 2; do
  mkdir -p $OUT/plan$run
  echo "== plan cudnn, process $run" >> $OUT/b-plans.txt
  timeout 150 python3 bench.py --plan cudnn --budget 0.5 --out $OUT/plan$run >> $OUT/b-plans.txt 2>&1
  echo "plan $run rc=$?"
done
echo "== plan cudnn-other" >> $OUT/b-plans.txt
timeout 150 python3 bench.py --plan cudnn-other --budget 0.5 --out $OUT >> $OUT/b-plans.txt 2>&1
echo "plan other rc=$?"; grep -E "^bars:" $OUT/b-plans.txt
rm -f $OUT/*.png $OUT/plan*/*.png
echo "== judge" >> $OUT/b-plans.txt
python3 bench.py --judge $OUT/plan1/*.json $OUT/plan2/*.json 2>&1 | tee -a $OUT/b-plans.txt | tail -n 24
