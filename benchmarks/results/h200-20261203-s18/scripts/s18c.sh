#!/usr/bin/env bash
# session 18 run c: the tilings chosen by the fitted forward model; smoke, tests, kernels, A/B, the table
set -uo pipefail
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 LLTM_JIT_CACHE_DIR=/tmp/lltm-cache
S=benchmarks/results/h200-20261203-s18/scripts
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
  python3 -c "import torch; print('torch', torch.__version__, 'CUDA', torch.version.cuda, 'cuDNN', torch.backends.cudnn.version())"
  git log --oneline -1; git status --short | head -30; } > $OUT/c-env.txt 2>&1
python3 -m lltm_jit build > $OUT/c-build.txt 2>&1; python3 -m lltm_jit info >> $OUT/c-build.txt 2>&1
grep -E "built in" $OUT/c-build.txt | head -3
PYTHONPATH=$PWD:$PWD/tests timeout 120 python3 $S/smoke.py > $OUT/c-smoke.txt 2>&1; echo "smoke rc=$?"; cat $OUT/c-smoke.txt | cut -c1-250
PYTHONPATH=$PWD:$PWD/tests CLUSTER_SETTINGS="16 0" timeout 100 python3 $S/kernels.py 8x256x512:float16 16x32x128:bfloat16 64x256x512:bfloat16 128x512x512:float16 600x8x256:bfloat16 5x8x40:bfloat16 32x256x256:bfloat16 > $OUT/c-kernels.txt 2>&1; grep clusters $OUT/c-kernels.txt | cut -c1-200
timeout 240 python3 -m pytest -q -n 8 --timeout 150 tests/test_sequence.py tests/test_module.py -k "cuda or tensor_core or which_persistent or fall_back or cublas or graph or tf32" > $OUT/c-tests.txt 2>&1; tail -15 $OUT/c-tests.txt | cut -c1-300
timeout 200 python3 -m benchmarks.ab --base 803d85e --rounds 2 --env LLTM_JIT_CLUSTERS=0 --sizes 8x256x512:float16,64x256x512:bfloat16,128x512x512:float16,600x8x256:bfloat16,16x32x128:bfloat16,40x8x512:float16,12x8x330:bfloat16,5x8x40:bfloat16,32x256x256:bfloat16 > $OUT/c-ab.txt 2>&1
timeout 100 python3 bench.py --plan cudnn --budget 0.5 --out $OUT > $OUT/c-plan-cudnn.txt 2>&1
grep -E "T=|lltm_jit|lstm " $OUT/c-plan-cudnn.txt | grep -v "^\[" | paste - - - | cut -c1-200
grep " us" $OUT/c-ab.txt
# where the cluster forward's step goes: ncu's warp states and per-instruction stall samples
if command -v ncu >/dev/null; then
  PYTHONPATH=$PWD:$PWD/tests timeout 150 ncu --kernel-name regex:tensor_core_forward_kernel --launch-skip 2 --launch-count 1 \
    --section WarpStateStats --section SchedulerStats --section SourceCounters --section LaunchStats \
    python3 $S/one_forward.py 8 256 512 float16 > $OUT/c-ncu.txt 2>&1
  PYTHONPATH=$PWD:$PWD/tests timeout 150 ncu --kernel-name regex:tensor_core_forward_kernel --launch-skip 2 --launch-count 1 \
    --section SourceCounters --page source --print-source sass --csv \
    python3 $S/one_forward.py 8 256 512 float16 > $OUT/c-ncu-sass.csv 2>&1
  grep -E "Warp Cycles|Stall|Issued|Eligible" $OUT/c-ncu.txt | head -30
else
  echo "no ncu"
fi
