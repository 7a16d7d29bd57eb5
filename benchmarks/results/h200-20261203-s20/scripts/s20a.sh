#!/usr/bin/env bash
# session 20 run a: the fp32 forward with lanes sharing a column (branch next/fp32-forward-lanes)
# against main (A/B), its stages at 64x256x512 fp32, then the sequence and LSTM-parity tests
set -uo pipefail
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 LLTM_JIT_CACHE_DIR=/tmp/lltm-cache
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
  python3 -c "import torch; print('torch', torch.__version__, 'CUDA', torch.version.cuda, 'cuDNN', torch.backends.cudnn.version())"
  git log --oneline -2; git status --short | head -40; } > $OUT/a-env.txt 2>&1
python3 -m lltm_jit build > $OUT/a-build.txt 2>&1; python3 -m lltm_jit info >> $OUT/a-build.txt 2>&1
grep -E "built in" $OUT/a-build.txt | head -3
timeout 200 python3 -m benchmarks.ab --base a1ab279 --rounds 2 --sizes 64x256x512:float32,64x512x512:float32,40x8x330:float32,8x64x512:float32,264x128x256:float32,16x32x128:float32,5x40x40:float64 > $OUT/a-ab.txt 2>&1
grep " us" $OUT/a-ab.txt
timeout 100 python3 -m benchmarks.stages --rounds 1 --sizes 64x256x512:float32 > $OUT/a-stages.txt 2>&1
grep " us" $OUT/a-stages.txt
S=benchmarks/results/h200-20261203-s20/scripts
for size in "16 32 128 64 float32" "8 256 512 256 float16" "256 512 1024 64 bfloat16" "256 512 1024 64 float32"; do timeout 60 python3 $S/seq_profile.py $size; done > $OUT/a-profile.txt 2>&1
grep -E "total|wall" $OUT/a-profile.txt
timeout 260 python3 -m pytest -q -rf -p no:cacheprovider -n 8 --timeout 240 tests/test_sequence.py tests/test_lstm_parity.py > $OUT/a-tests.txt 2>&1; echo "tests rc=$?"
grep -E "passed|failed|FAILED|Error" $OUT/a-tests.txt | tail -15 | cut -c1-300
