#!/usr/bin/env bash
# session 18 run a: the tensor-core kernels' groups as thread-block clusters; smoke, tests, A/B, the issue's table
set -uo pipefail
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 LLTM_JIT_CACHE_DIR=/tmp/lltm-cache
S=benchmarks/results/h200-20261203-s18/scripts
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
  python3 -c "import torch; print('torch', torch.__version__, 'CUDA', torch.version.cuda, 'cuDNN', torch.backends.cudnn.version())"
  git log --oneline -1; git status --short | head -30; } > $OUT/a-env.txt 2>&1
python3 -m lltm_jit build > $OUT/a-build.txt 2>&1; python3 -m lltm_jit info >> $OUT/a-build.txt 2>&1
grep -E "built in" $OUT/a-build.txt | head -3
PYTHONPATH=$PWD:$PWD/tests timeout 120 python3 $S/smoke.py > $OUT/a-smoke.txt 2>&1; echo "smoke rc=$?"; cat $OUT/a-smoke.txt | cut -c1-250
timeout 240 python3 -m pytest -q -n 8 --timeout 150 tests/test_sequence.py tests/test_module.py -k "cuda or tensor_core or which_persistent or fall_back or cublas or graph or tf32" > $OUT/a-tests.txt 2>&1; tail -15 $OUT/a-tests.txt | cut -c1-300
timeout 200 python3 -m benchmarks.ab --base 803d85e --rounds 2 --env LLTM_JIT_CLUSTERS=0 --sizes 8x256x512:float16,64x256x512:bfloat16,128x512x512:float16,1024x256x256:bfloat16,256x256x512:bfloat16,16x32x128:bfloat16 > $OUT/a-ab.txt 2>&1
timeout 100 python3 bench.py --plan cudnn --budget 0.5 --out $OUT > $OUT/a-plan-cudnn.txt 2>&1
grep -E "T=|lltm_jit|lstm " $OUT/a-plan-cudnn.txt | grep -v "^\[" | paste - - - | cut -c1-200
grep " us" $OUT/a-ab.txt
