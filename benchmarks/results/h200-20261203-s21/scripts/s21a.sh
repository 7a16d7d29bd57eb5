#!/usr/bin/env bash
# session 21 run a: the fp32 backward's paired lanes (runs/ab/pairs: main + that change) and the
# forward's stores after the group's arrival (the working tree: both) against main, with session
# 20's step kernels against a1ab279 in the same A/B; then the sequence and LSTM-parity tests, then
# where the 16x32x128 fp32 row's host time goes. Carries runs/ab (git archive of each base).
set -uo pipefail
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 LLTM_JIT_CACHE_DIR=/tmp/lltm-cache
S=benchmarks/results/h200-20261203-s21/scripts
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
  python3 -c "import torch; print('torch', torch.__version__, 'CUDA', torch.version.cuda, 'cuDNN', torch.backends.cudnn.version())"
  git log --oneline -1; git status --short | head -40; } > $OUT/a-env.txt 2>&1
python3 -m lltm_jit build > $OUT/a-build.txt 2>&1; python3 -m lltm_jit info >> $OUT/a-build.txt 2>&1
grep -E "built in" $OUT/a-build.txt | head -3
timeout 230 python3 -m benchmarks.ab --base runs/ab/main --base runs/ab/pairs --base runs/ab/a1ab279 --rounds 2 \
  --sizes 64x256x512:float32,64x512x512:float32,264x128x256:float32,16x32x128:float32,40x8x330:float32,5x40x40:float64,128x512x512:float16,64x1024x1024:float16,8x256x512:float16,1024x256x256:bfloat16,600x8x256:bfloat16,256x512x1024:bfloat16,256x512x1024:float32 \
  > $OUT/a-ab.txt 2>&1; echo "ab rc=$?"
grep " us" $OUT/a-ab.txt | sort -s -k2,2 -k3,3 | awk '{k=$2" "$3; v[k]=v[k]" "$1"="$4} END {for (k in v) print k, v[k]}' | sort
timeout 200 python3 -m pytest -q -rfE -p no:cacheprovider -n 12 --timeout 180 tests/test_sequence.py tests/test_lstm_parity.py > $OUT/a-tests.txt 2>&1; echo "tests rc=$?"
grep -E "FAILED|ERROR|passed|failed" $OUT/a-tests.txt | tail -12 | cut -c1-250
timeout 60 python3 $S/seq_host.py > $OUT/a-host.txt 2>&1; cat $OUT/a-host.txt | cut -c1-100
