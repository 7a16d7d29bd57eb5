#!/usr/bin/env bash
# Session 35, prepared and not run (the session's device time was spent): on branch
# issue21-bwd-after (or main with bwd-after.patch applied), benchmarks.ab of main (the patch
# reversed) against the tree: the CUDA-core backward's stores and next inputs after the operand's
# barrier (the tensor-core sizes are controls: their kernels' PTX is unchanged); the sequence op's
# CUDA tests on the tree; then bench.py --plan cudnn and --plan cudnn-other (issue 21's rows).
set -uo pipefail
export PYTHONUNBUFFERED=1
ROOT=$PWD; S=$ROOT/benchmarks/results/h100-20261206-s35/scripts
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
bash benchmarks/device_env.sh > $OUT/d-env.txt 2>&1
rm -rf /tmp/main && mkdir /tmp/main
cp -r lltm_jit src /tmp/main/ && (cd /tmp/main && patch -s -R -p1 < $S/bwd-after.patch) || exit 1
PYTHONPATH=$ROOT timeout 150 python3 -m benchmarks.ab --base /tmp/main --rounds 3 \
  --sizes 16x32x128:float32,64x256x512:float32,32x128x256:float32,32x64x128:float64,64x256x512:bfloat16,8x256x512:float16 \
  > $OUT/d-ab.txt 2>&1
echo "ab rc=$?"
tail -8 $OUT/d-ab.txt
LLTM_JIT_CACHE_DIR=/tmp/tests timeout 120 python3 -m pytest -q -n 14 -p no:cacheprovider \
  tests/test_sequence.py tests/test_amp.py tests/test_lstm_parity.py -k "not cpu" > $OUT/d-tests.txt 2>&1
echo "tests rc=$?"
tail -n 3 $OUT/d-tests.txt
timeout 90 python3 bench.py --plan cudnn --budget 0.5 --out $OUT > $OUT/d-plan-cudnn.txt 2>&1
echo "plan rc=$?"
grep -E "^bars:|^  OVER|^  met" $OUT/d-plan-cudnn.txt
timeout 120 python3 bench.py --plan cudnn-other --budget 0.5 --out $OUT > $OUT/d-plan-cudnn-other.txt 2>&1
echo "plan other rc=$?"
grep -E "^bars:|^  OVER" $OUT/d-plan-cudnn-other.txt
rm -f $OUT/*.png
