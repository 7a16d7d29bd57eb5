#!/usr/bin/env bash
# Session 8, call 3: zero initial state as None, state gradients and d_bias in the persistent
# backward. CUDA tests (whole non-slow suite), host costs, the 16x32x128 row four times, the
# whole sequence bench once.
set -uo pipefail
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 LLTM_JIT_CACHE_DIR=/tmp/lltm-8c
{ date -u +%Y-%m-%dT%H:%M:%SZ; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c "import torch; print('torch', torch.__version__, 'CUDA', torch.version.cuda, 'cuDNN', torch.backends.cudnn.version())"
  git log --oneline -1; git status --short | head -20; } > $OUT/env.txt 2>&1
s=$SECONDS; python3 -c "import lltm_jit; print(lltm_jit.build_info()['key'])" > $OUT/build.txt 2>&1 || { tail -30 $OUT/build.txt; exit 1; }
echo "build $((SECONDS-s)) s"
s=$SECONDS; timeout 240 python3 -m pytest tests -m "not slow" -q -p no:cacheprovider > $OUT/tests.txt 2>&1; echo "tests rc=$? $((SECONDS-s)) s: $(tail -1 $OUT/tests.txt)"
grep -E "^FAILED|^ERROR" $OUT/tests.txt | head -8
timeout 100 python3 .gpu/unit8.py > $OUT/unit.txt 2>&1; grep -E "fwd" $OUT/unit.txt
for i in 1 2 3 4; do
  timeout 60 python3 bench.py --kind sequence --sizes 16x32x128 --dtypes float32 --no-save > $OUT/row-$i.txt 2>/dev/null
  echo "run $i: $(grep -A4 'fwd+bwd: floor' $OUT/row-$i.txt | grep -E '^  (lltm_jit|lstm) ' | awk '{printf "%s %s us (t/lstm %s)  ", $1, $2, $6}')"
done
s=$SECONDS; timeout 140 python3 bench.py --kind sequence --no-save > $OUT/bench-sequence.txt 2>/dev/null; echo "bench rc=$? $((SECONDS-s)) s"
grep -A5 "fwd+bwd: floor" $OUT/bench-sequence.txt | grep -E "floor|^  (lltm_jit|lstm) "
cd $OUT && tar czf rows.tar.gz row-*.txt && rm row-*.txt
