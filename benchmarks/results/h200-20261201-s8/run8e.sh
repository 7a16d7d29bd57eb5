#!/usr/bin/env bash
# Session 8, call 5: the review's fixes (copies on the step path, batch 0 d_bias, weights' rows
# checked first): the whole non-slow suite on CUDA, the 16x32x128 row twice.
set -uo pipefail
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 LLTM_JIT_CACHE_DIR=/tmp/lltm-8e
{ date -u +%Y-%m-%dT%H:%M:%SZ; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c "import torch; print('torch', torch.__version__, 'CUDA', torch.version.cuda, 'cuDNN', torch.backends.cudnn.version())"; } > $OUT/env.txt 2>&1
s=$SECONDS; python3 -c "import lltm_jit; print(lltm_jit.build_info()['key'])" > $OUT/build.txt 2>&1 || { tail -30 $OUT/build.txt; exit 1; }
echo "build $((SECONDS-s)) s"
s=$SECONDS; timeout 240 python3 -m pytest tests -m "not slow" -q -p no:cacheprovider > $OUT/tests.txt 2>&1; echo "tests rc=$? $((SECONDS-s)) s: $(tail -1 $OUT/tests.txt)"
grep -E "^FAILED|^ERROR" $OUT/tests.txt | head -8
for i in 8 9; do
  timeout 60 python3 bench.py --kind sequence --sizes 16x32x128 --dtypes float32 --no-save > $OUT/row-$i.txt 2>/dev/null
  echo "run $i: $(grep -A4 'fwd+bwd: floor' $OUT/row-$i.txt | grep -E '^  (lltm_jit|lstm) ' | awk '{printf "%s %s us (t/lstm %s)  ", $1, $2, $6}')"
done
