#!/usr/bin/env bash
# session 19 run c: the table with the final sources, then the tests that run b's -n 12 /
# 100 s timeouts cut short (b-not-reported.txt), fewer at a time with room to finish
set -uo pipefail
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 LLTM_JIT_CACHE_DIR=/tmp/lltm-cache
S=benchmarks/results/h200-20261203-s19/scripts
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
  python3 -c "import torch; print('torch', torch.__version__, 'CUDA', torch.version.cuda, 'cuDNN', torch.backends.cudnn.version())"
  git log --oneline -1; git status --short | head; } > $OUT/c-env.txt 2>&1
python3 -m lltm_jit build > $OUT/c-build.txt 2>&1; python3 -m lltm_jit info >> $OUT/c-build.txt 2>&1
grep -E "built in" $OUT/c-build.txt | head -2
timeout 100 python3 bench.py --plan cudnn --budget 0.5 --out $OUT > $OUT/c-plan-cudnn.txt 2>&1
grep -E "T=|lltm_jit|lstm " $OUT/c-plan-cudnn.txt | grep -v "^\[" | paste - - - | cut -c1-200
grep -v -E "test_cpp|aoti|deployment_doc" $S/b-not-reported.txt > /tmp/first.txt
grep -E "test_cpp|aoti|deployment_doc" $S/b-not-reported.txt > /tmp/second.txt
timeout 170 python3 -m pytest -v -rfE --tb=short -p no:cacheprovider -n 6 --timeout 160 $(cat /tmp/first.txt) > $OUT/c-tests.txt 2>&1; echo "first rc=$?"
timeout 120 python3 -m pytest -v -rfE --tb=short -p no:cacheprovider -n 8 --timeout 110 $(cat /tmp/second.txt) >> $OUT/c-tests.txt 2>&1; echo "second rc=$?"
grep -E "PASSED|FAILED|ERROR|passed|failed" $OUT/c-tests.txt | grep -v "^tests/" | grep -vE "^\[gw[0-9]+\] \[ *[0-9]+%\] PASSED" | tail -20 | cut -c1-250
grep -cE "\] PASSED" $OUT/c-tests.txt
