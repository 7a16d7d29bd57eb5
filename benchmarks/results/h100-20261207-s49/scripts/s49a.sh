#!/usr/bin/env bash
# Session 49, call a, on main 20623f6 (the SS streamed product, the backward's products through
# cuBLAS, sequence_weights_gradient shared with CUDA): the cold build and info's per-file times;
# the CUDA tests of the sequence op, LSTM parity, ops, modules, autocast and loader; bench.py
# --plan cudnn in three processes judged together, and --plan cudnn-other. (The device returns 8
# files at most: the plans' logs go into one file.)
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
bash benchmarks/device_env.sh > $OUT/a-env.txt 2>&1; head -2 $OUT/a-env.txt
rm -rf /tmp/cache
{ time LLTM_JIT_CACHE_DIR=/tmp/cache python3 -c "import lltm_jit"; } > $OUT/a-build.txt 2>&1
LLTM_JIT_CACHE_DIR=/tmp/cache python3 -m lltm_jit info >> $OUT/a-build.txt 2>&1
grep -E "built in|^real" $OUT/a-build.txt
export LLTM_JIT_CACHE_DIR=/tmp/cache
timeout 240 python3 -m pytest -q -n 14 -p no:cacheprovider -k "not cpu" tests/test_sequence.py \
  tests/test_lstm_parity.py tests/test_module.py tests/test_ops.py tests/test_amp.py tests/test_loader.py \
  > $OUT/a-tests.txt 2>&1
echo "tests rc=$? at ${SECONDS}s"; tail -n 15 $OUT/a-tests.txt | grep -E "FAILED|ERROR|passed|failed"
for run in 1 2 3; do
  mkdir -p $OUT/plan$run
  echo "== plan cudnn, process $run" >> $OUT/a-plans.txt
  timeout 120 python3 bench.py --plan cudnn --budget 0.5 --out $OUT/plan$run >> $OUT/a-plans.txt 2>&1
  echo "plan $run rc=$? at ${SECONDS}s"
done
echo "== plan cudnn-other" >> $OUT/a-plans.txt
timeout 120 python3 bench.py --plan cudnn-other --budget 0.5 --out $OUT >> $OUT/a-plans.txt 2>&1
echo "plan other rc=$? at ${SECONDS}s"; grep -E "^bars:" $OUT/a-plans.txt
rm -f $OUT/*.png $OUT/plan*/*.png
echo "== judge" >> $OUT/a-plans.txt
python3 bench.py --judge $OUT/plan1/*.json $OUT/plan2/*.json $OUT/plan3/*.json 2>&1 | tee -a $OUT/a-plans.txt | tail -n 26
