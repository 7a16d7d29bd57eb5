#!/usr/bin/env bash
# Session 33, on main at 84ce60a: the whole test suite on the device (session 32's operator
# checks and symbolic sizes had run on the CPU only), then issue 21's cuDNN plan (last run in
# session 29, before the cluster fence 8968f01).
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
nvidia-smi --query-gpu=name --format=csv,noheader
bash benchmarks/device_env.sh > $OUT/b-env.txt 2>&1
python3 -m lltm_jit build 2>&1 | grep "built in"
timeout 330 python3 -m pytest -q -rfE -p no:cacheprovider -n 15 --timeout 280 --durations=10 tests > $OUT/b-tests.txt 2>&1
echo "tests rc=$?"
grep -E "(FAILED|ERROR) |passed|failed" $OUT/b-tests.txt | tail -12
for a in "16x32x128 64 float32" "8x256x512 256 float16"; do
  timeout 60 python3 benchmarks/results/h200-20261205-s33/scripts/kernels_small.py $a >> $OUT/b-kernels.txt 2>&1
done
grep -E "^[a-zA-Z].*busy" $OUT/b-kernels.txt
timeout 200 python3 bench.py --plan cudnn --budget 0.5 --out $OUT > $OUT/b-plan-cudnn.txt 2>&1
echo "plan rc=$?"
grep -E "^bars:|^  OVER|met" $OUT/b-plan-cudnn.txt | head -30
rm -f $OUT/*.png
