#!/usr/bin/env bash
# session 21 run c: where a step goes now in the fp32 CUDA-core kernels (paired lanes) and in the
# float16 tensor-core ones at state 1024 (stages), the test files b did not run, and the issue's
# table a second time (cuDNN's times move between runs)
set -uo pipefail
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 LLTM_JIT_CACHE_DIR=/tmp/lltm-cache
S=benchmarks/results/h200-20261203-s21/scripts
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
  git log --oneline -1; git status --short | head -40; } > $OUT/c-env.txt 2>&1
python3 -m lltm_jit build > $OUT/c-build.txt 2>&1; grep -E "built in" $OUT/c-build.txt | head -1
timeout 150 python3 -m benchmarks.stages --rounds 1 --sizes 64x256x512:float32,64x1024x1024:float16 > $OUT/c-stages.txt 2>&1
echo "stages rc=$?"; grep " us" $OUT/c-stages.txt
timeout 80 python3 bench.py --plan cudnn --budget 0.5 --out $OUT > $OUT/c-plan-cudnn.txt 2>&1
python3 $S/table.py $OUT/c-plan-cudnn.txt
timeout 230 python3 -m pytest -q -rfE -p no:cacheprovider -n 14 --timeout 210 --durations=8 tests/test_ops.py \
  tests/test_errors.py tests/test_export.py tests/test_bench.py > $OUT/c-tests.txt 2>&1; echo "tests rc=$?"
pkill -f pytest; grep -E "FAILED|ERROR|passed|failed|^[0-9.]+s (call|setup)" $OUT/c-tests.txt | tail -20 | cut -c1-200
