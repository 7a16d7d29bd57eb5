#!/usr/bin/env bash
# Session 37, call c: the paired forward's "rest" (b-stalls-paired16.txt: the gather 11.6% of the
# samples, the update's runtime loop over the slices' partial sums 6.1%). The tree (rest.patch on
# main): the gather as one run of 16-byte loads where the operand's rows are contiguous (no
# division a load), and the loops over the slices' partial sums unrolled by 4 (both directions).
# gather.patch: the gather alone. benchmarks.ab (main, gather alone, the tree), the module rows
# of session 36 (paired.py, main and the tree), the sequence op's CUDA tests, then the plan.
set -uo pipefail
export PYTHONUNBUFFERED=1
ROOT=$PWD; HERE=$ROOT/benchmarks/results/h100-20261206-s37/scripts; S36=$ROOT/benchmarks/results/h100-20261206-s36/scripts
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
bash benchmarks/device_env.sh > $OUT/c-env.txt 2>&1
rm -rf /tmp/main /tmp/gather && mkdir /tmp/main && cp -r lltm_jit src /tmp/main/ && (cd /tmp/main && patch -s -R -p1 < $HERE/rest.patch) || exit 1
cp -r /tmp/main /tmp/gather && (cd /tmp/gather && patch -s -p1 < $HERE/gather.patch) || exit 1
export PYTHONPATH=$ROOT
timeout 240 python3 -m benchmarks.ab --base /tmp/main --base /tmp/gather --rounds 2 --sizes \
  64x256x512:float32:paired,64x256x512:float32,32x128x256:float32:paired,16x32x128:float32,64x1024x1024:float16,8x256x512:float16,1024x256x256:bfloat16,64x256x512:bfloat16 \
  > $OUT/c-ab.txt 2>&1
echo "ab rc=$?"; sed -n '/^size/,$p' $OUT/c-ab.txt
run() { timeout 80 env "$@" >> $OUT/c-paired.txt 2>&1; }
run PYTHONPATH=/tmp/main LLTM_JIT_CACHE_DIR=/tmp/cache-main python3 $S36/paired.py main
run LLTM_JIT_CACHE_DIR=/tmp/cache-new python3 $S36/paired.py rest
run PYTHONPATH=/tmp/main LLTM_JIT_CACHE_DIR=/tmp/cache-main python3 $S36/paired.py main
grep -E "^(main|rest) " $OUT/c-paired.txt
LLTM_JIT_CACHE_DIR=/tmp/cache-new timeout 60 python3 $S36/paired.py rest check 2>&1 | grep check | tee $OUT/c-check.txt
LLTM_JIT_CACHE_DIR=/tmp/cache-new timeout 120 python3 -m pytest -q -n 14 -p no:cacheprovider \
  tests/test_sequence.py tests/test_lstm_parity.py tests/test_amp.py -k "not cpu" > $OUT/c-tests.txt 2>&1
echo "tests rc=$?"; tail -n 15 $OUT/c-tests.txt | grep -E "FAILED|passed|failed"
LLTM_JIT_CACHE_DIR=/tmp/cache-new timeout 110 python3 bench.py --plan cudnn --budget 0.5 --out $OUT > $OUT/c-plan-cudnn.txt 2>&1
echo "plan rc=$?"; grep -E "^bars:|^  OVER|^  met" $OUT/c-plan-cudnn.txt
