#!/usr/bin/env bash
# session 17 run d: W_h^T row-major for TF32's backward products; tests; the issue's table
set -uo pipefail
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 LLTM_JIT_CACHE_DIR=/tmp/lltm-cache
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
  python3 -c "import torch; print('torch', torch.__version__, 'CUDA', torch.version.cuda, 'cuDNN', torch.backends.cudnn.version())"
  git log --oneline -1; git status --short | head; } > $OUT/d-env.txt 2>&1
python3 -m lltm_jit build > $OUT/d-build.txt 2>&1; python3 -m lltm_jit info >> $OUT/d-build.txt 2>&1
grep -E "built in" $OUT/d-build.txt | head -3
timeout 200 python3 -m pytest -q -n 8 --timeout 150 tests/test_sequence.py tests/test_module.py -k "cuda or tensor_core or which_persistent or fall_back or cublas or graph or tf32" > $OUT/d-tests.txt 2>&1; tail -3 $OUT/d-tests.txt
timeout 150 python3 -m benchmarks.ab --base 41edd00 --rounds 2 --sizes 256x512x1024:tf32,512x256x512:tf32,512x512x1024:tf32,1024x256x1024:tf32,256x512x1024:float32 > $OUT/d-ab.txt 2>&1
timeout 100 python3 bench.py --plan cudnn --budget 0.5 --out $OUT > $OUT/d-plan-cudnn.txt 2>&1
grep -E "T=|lltm_jit|lstm " $OUT/d-plan-cudnn.txt | grep -v "^\[" | paste - - - - | awk '{print}' | cut -c1-200
grep " us" $OUT/d-ab.txt
