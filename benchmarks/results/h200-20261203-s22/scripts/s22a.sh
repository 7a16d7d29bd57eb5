#!/usr/bin/env bash
# session 22 call a: where the rows short of issue 21's bars spend their device time (kernel by
# kernel, ours and cuDNN's), to choose the next change
set -uo pipefail
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 LLTM_JIT_CACHE_DIR=/tmp/lltm-cache
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
  python3 -c "import torch; print('torch', torch.__version__, 'CUDA', torch.version.cuda, 'cuDNN', torch.backends.cudnn.version())"
  git log --oneline -1; git status --short | head -40; } > $OUT/a-env.txt 2>&1
python3 -m lltm_jit build > $OUT/a-build.txt 2>&1; python3 -m lltm_jit info >> $OUT/a-build.txt 2>&1
grep -E "built in" $OUT/a-build.txt | head -2
P="python3 benchmarks/profile_step.py --kind sequence --steps 10"
run() {  # size dtype backend [--forward]
  echo "=== $*"; timeout 60 $P --size $1 --dtype $2 --backend $3 ${4:-} 2>&1 | head -14
}
{
for b in lltm_jit lstm; do
  run 64x256x512:T128:L2:bi float32 $b
  run 64x1024x1024 float16 $b
  run 64x1024x1024 float16 $b --forward
  run 8x256x512:T256 float16 $b
  run 8x256x512:T256 float16 $b --forward
  run 256x512x1024:tf32 float32 $b
done
run 64x256x512:T128 float32 lltm_jit
run 64x512x512:T128:L2:bi float32 lltm_jit
} > $OUT/a-profiles.txt 2>&1
grep -E "^===|total|wall" $OUT/a-profiles.txt
