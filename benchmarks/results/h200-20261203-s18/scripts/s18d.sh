#!/usr/bin/env bash
# session 18 run d: the final sources (clusters chosen by the rough cost with a 1000-cycle exchange and
# no more rows than without); cold build, every test, smoke, A/B, the table
set -uo pipefail
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 LLTM_JIT_CACHE_DIR=/tmp/lltm-cache
S=benchmarks/results/h200-20261203-s18/scripts
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
  python3 -c "import torch; print('torch', torch.__version__, 'CUDA', torch.version.cuda, 'cuDNN', torch.backends.cudnn.version())"
  git log --oneline -1; git status --short | head -40; } > $OUT/d-env.txt 2>&1
python3 -m lltm_jit build > $OUT/d-build.txt 2>&1; python3 -m lltm_jit info >> $OUT/d-build.txt 2>&1
grep -E "built in" $OUT/d-build.txt | head -3
PYTHONPATH=$PWD:$PWD/tests timeout 100 python3 $S/smoke.py > $OUT/d-smoke.txt 2>&1; echo "smoke rc=$?"; cut -c1-60 $OUT/d-smoke.txt; grep -o "bitwise equal: [A-Za-z]*" $OUT/d-smoke.txt | sort | uniq -c
timeout 290 python3 -m pytest -q -n 8 --timeout 200 tests > $OUT/d-tests.txt 2>&1; grep -E "passed|failed|FAILED|Error" $OUT/d-tests.txt | tail -12 | cut -c1-250
timeout 120 python3 bench.py --plan cudnn --budget 0.5 --out $OUT > $OUT/d-plan-cudnn.txt 2>&1
grep -E "T=|lltm_jit|lstm " $OUT/d-plan-cudnn.txt | grep -v "^\[" | paste - - - | cut -c1-200
timeout 150 python3 -m benchmarks.ab --base 803d85e --rounds 1 --env LLTM_JIT_CLUSTERS=0 --sizes 8x256x512:float16,64x256x512:bfloat16,600x8x256:bfloat16,16x32x128:bfloat16,40x8x512:float16,12x8x330:bfloat16,32x256x256:bfloat16 > $OUT/d-ab.txt 2>&1
grep " us" $OUT/d-ab.txt
