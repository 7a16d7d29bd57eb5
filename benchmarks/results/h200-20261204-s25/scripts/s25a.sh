#!/usr/bin/env bash
# session 25 call a: the working tree (the forward's gather through L2 on the bulk copy engine
# wherever rows are whole 16 bytes) against HEAD, three rounds; issue 21's rows against cuDNN
# (bfloat16 nn.LSTM flattened); the cold build's per-file times
set -uo pipefail
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 LLTM_JIT_CACHE_DIR=/tmp/lltm-cache
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
  python3 -c "import torch; print('torch', torch.__version__, 'CUDA', torch.version.cuda, 'cuDNN', torch.backends.cudnn.version())"
  git log --oneline -1; git status --short | head -40; } > $OUT/a-env.txt 2>&1
python3 -m lltm_jit build > $OUT/a-build.txt 2>&1; python3 -m lltm_jit info >> $OUT/a-build.txt 2>&1
grep -E "built in" $OUT/a-build.txt | head -2
timeout 230 python3 -m benchmarks.ab --base HEAD --rounds 3 --sizes \
  32x8x1400:bfloat16,64x1024x1024:float16,64x512x1024:bfloat16,1024x256x256:bfloat16,128x512x512:float16,8x256x512:float16 \
  > $OUT/a-ab.txt 2>&1
echo "ab rc=$?"; grep -E "fwd" $OUT/a-ab.txt | sort -k2,2 -k3,3 -k1,1 -s | awk '{print $1, $2, $3, $4}' | paste - - - - - -
timeout 150 python3 bench.py --plan cudnn --budget 0.5 --out $OUT > $OUT/a-plan-cudnn.txt 2>&1
echo "plan rc=$?"
grep -E "^[0-9].*(fwd|bwd)|^  lltm_jit |^  lstm " $OUT/a-plan-cudnn.txt | paste - - - | sed -E 's/ +/ /g' | cut -c1-150
