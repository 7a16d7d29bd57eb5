#!/usr/bin/env bash
# Session 48, call a, on main with the SS streamed product (a40bfcd) and the backward's products
# through cuBLAS (ba961e6): the cold build and info's per-file times; the CUDA tests of the
# sequence op, ops, modules, autocast and loader; the streamed kernel's mma.sync product (a plain
# sm_90 build) checked against the reference; bench.py's cuDNN plan in one process.
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
bash benchmarks/device_env.sh > $OUT/a-env.txt 2>&1; head -2 $OUT/a-env.txt
rm -rf /tmp/cache
{ time LLTM_JIT_CACHE_DIR=/tmp/cache python3 -c "import lltm_jit"; } > $OUT/a-build.txt 2>&1
LLTM_JIT_CACHE_DIR=/tmp/cache python3 -m lltm_jit info >> $OUT/a-build.txt 2>&1
grep -E "built in|^real" $OUT/a-build.txt
export LLTM_JIT_CACHE_DIR=/tmp/cache
timeout 240 python3 -m pytest -q -n 14 -p no:cacheprovider -k "not cpu" tests/test_sequence.py tests/test_module.py \
  tests/test_ops.py tests/test_amp.py tests/test_loader.py > $OUT/a-tests.txt 2>&1
echo "tests rc=$?"; tail -n 15 $OUT/a-tests.txt | grep -E "FAILED|ERROR|passed|failed"
TORCH_CUDA_ARCH_LIST=9.0 LLTM_JIT_CACHE_DIR=/tmp/cache90 timeout 200 \
  python3 benchmarks/results/h100-20261206-s42/scripts/check_streamed.py > $OUT/a-check-sm90.txt 2>&1
echo "check sm_90 (mma.sync product) rc=$?"; grep -v Warn $OUT/a-check-sm90.txt | grep x | cut -c1-110
# PLAN=0 (a call with ~6 minutes of device time): no plan
[ "${PLAN:-1}" = 0 ] && exit 0
mkdir -p $OUT/plan
timeout 170 python3 bench.py --plan cudnn --budget 0.5 --out $OUT/plan > $OUT/a-plan.txt 2>&1
echo "plan rc=$?"; rm -f $OUT/plan/*.png
grep -E "^bars:|met|OVER" $OUT/a-plan.txt | tail -n 30
