#!/usr/bin/env bash
# session 20 run b: the per-step path's step kernels in packs of 4 columns against main (A/B at the
# sizes past the persistent kernels; the persistent sizes as a control), the table, the
# host's CUDA calls of a small call (nsys), then the tests of the sequence op, the step op, the modules and autocast, ten at a time
set -uo pipefail
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 LLTM_JIT_CACHE_DIR=/tmp/lltm-cache
S=benchmarks/results/h200-20261203-s20/scripts
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
  python3 -c "import torch; print('torch', torch.__version__, 'CUDA', torch.version.cuda, 'cuDNN', torch.backends.cudnn.version())"
  git log --oneline -2; git status --short | head -40; } > $OUT/b-env.txt 2>&1
python3 -m lltm_jit build > $OUT/b-build.txt 2>&1; python3 -m lltm_jit info >> $OUT/b-build.txt 2>&1
grep -E "built in" $OUT/b-build.txt | head -3
timeout 120 python3 -m benchmarks.ab --base 59aa9b1 --rounds 2 --sizes 256x512x1024:bfloat16,256x512x1024:float32,256x512x1024:tf32,128x512x512:float32,1024x256x1024:float16,64x256x512:bfloat16 > $OUT/b-ab.txt 2>&1
grep " us" $OUT/b-ab.txt
timeout 70 python3 bench.py --plan cudnn --budget 0.5 --out $OUT > $OUT/b-plan-cudnn.txt 2>&1
grep -E "T=|lltm_jit|lstm " $OUT/b-plan-cudnn.txt | grep -v "^\[" | paste - - - | cut -c1-200
if command -v nsys > /dev/null; then
  timeout 40 nsys profile -t cuda,nvtx -f true -o /tmp/host python3 $S/host_calls.py > /dev/null 2>&1
  nsys stats -q --report cuda_api_sum /tmp/host.nsys-rep > $OUT/b-host.txt 2>&1
  head -30 $OUT/b-host.txt | cut -c1-160
else echo "no nsys"; fi
timeout 240 python3 -m pytest -v -rfE --tb=short -p no:cacheprovider -n 10 --timeout 220 tests/test_sequence.py \
  tests/test_lstm_parity.py tests/test_ops.py tests/test_module.py tests/test_amp.py > $OUT/b-tests.txt 2>&1; echo "tests rc=$?"
grep -E "FAILED|ERROR|Timeout|passed|failed" $OUT/b-tests.txt | grep -vE "^\[gw[0-9]+\] \[ *[0-9]+%\] PASSED" | tail -20 | cut -c1-250
