#!/usr/bin/env bash
# session 19 run a: the release/acquire group barrier and the 16-byte fp32 gather against HEAD
# (A/B), the CUDA-core kernels' stages at fp32 64x256x512, then every test
set -uo pipefail
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 LLTM_JIT_CACHE_DIR=/tmp/lltm-cache
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
  python3 -c "import torch; print('torch', torch.__version__, 'CUDA', torch.version.cuda, 'cuDNN', torch.backends.cudnn.version())"
  git log --oneline -1; git status --short | head -40; } > $OUT/a-env.txt 2>&1
python3 -m lltm_jit build > $OUT/a-build.txt 2>&1; python3 -m lltm_jit info >> $OUT/a-build.txt 2>&1
grep -E "built in" $OUT/a-build.txt | head -3
timeout 150 python3 -m benchmarks.ab --base HEAD --rounds 1 --sizes 64x256x512:float32,16x32x128:float32,40x8x330:float32,128x512x512:float16,64x1024x1024:float16,1024x256x256:bfloat16 > $OUT/a-ab.txt 2>&1
grep " us" $OUT/a-ab.txt
timeout 120 python3 -m benchmarks.stages --rounds 1 --sizes 64x256x512:float32,64x1024x1024:float16 > $OUT/a-stages.txt 2>&1
grep " us" $OUT/a-stages.txt
timeout 330 python3 -m pytest -q -rf -n 12 --timeout 300 tests > $OUT/a-tests.txt 2>&1; echo "tests rc=$?"
grep -E "passed|failed|FAILED|Error" $OUT/a-tests.txt | tail -15 | cut -c1-300
