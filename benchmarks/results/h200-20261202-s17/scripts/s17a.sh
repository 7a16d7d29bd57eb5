#!/usr/bin/env bash
# session 17 run a: split-K step products
set -uo pipefail
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 LLTM_JIT_CACHE_DIR=/tmp/lltm-cache
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
  python3 -c "import torch; print('torch', torch.__version__, 'CUDA', torch.version.cuda, 'cuDNN', torch.backends.cudnn.version())"
  git log --oneline -1; git status --short | head; } > $OUT/a-env.txt 2>&1
python3 -m lltm_jit build > $OUT/a-build.txt 2>&1; python3 -m lltm_jit info >> $OUT/a-build.txt 2>&1
grep -E "built in" $OUT/a-build.txt | head -3
timeout 200 python3 -m pytest -q -n 8 --timeout 150 tests/test_sequence.py tests/test_module.py -k "cuda or tensor_core or which_persistent or fall_back or cublas or graph or split" > $OUT/a-tests.txt 2>&1; tail -3 $OUT/a-tests.txt
python3 .ab/prof_seq.py 256x512x1024:float32 256x512x1024:tf32 > $OUT/a-prof.txt 2>&1; cat $OUT/a-prof.txt
timeout 260 python3 -m benchmarks.ab --base 41edd00 --rounds 2 --sizes 256x512x1024:float32,256x512x1024:tf32,128x512x1024:float32,512x256x512:tf32 --env LLTM_JIT_SPLIT_K=1 --env LLTM_JIT_SPLIT_K=2 --env LLTM_JIT_SPLIT_K=4 --env LLTM_JIT_SPLIT_K=8 > $OUT/a-ab.txt 2>&1
timeout 100 python3 bench.py --plan cudnn --budget 0.5 --out $OUT > $OUT/a-plan-cudnn.txt 2>&1
grep -E "T=|lltm_jit|lstm " $OUT/a-plan-cudnn.txt | tail -75 | grep -A2 "256x512x1024\|16x32x128" 
grep " us" $OUT/a-ab.txt
