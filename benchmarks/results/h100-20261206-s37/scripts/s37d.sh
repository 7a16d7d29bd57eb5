#!/usr/bin/env bash
# Session 37, call d: the CUDA-core product's operand interleaved by packs (interleaved.patch on
# 902a335: each q's packs of the R rows side by side, so that the product reads a row's pack at an
# offset known when compiled; its inner loops lose 14-16 integer instructions a pack: fp32
# forward of 16 rows 234 -> 220, backward 173 -> 158). benchmarks.ab (902a335 against the tree),
# the sequence op's CUDA tests, the module rows (paired.py) and the float64 check.
set -uo pipefail
export PYTHONUNBUFFERED=1
ROOT=$PWD; HERE=$ROOT/benchmarks/results/h100-20261206-s37/scripts; S36=$ROOT/benchmarks/results/h100-20261206-s36/scripts
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
bash benchmarks/device_env.sh > $OUT/d-env.txt 2>&1
rm -rf /tmp/rest && mkdir /tmp/rest && cp -r lltm_jit src /tmp/rest/ && (cd /tmp/rest && patch -s -R -p1 < $HERE/interleaved.patch) || exit 1
export PYTHONPATH=$ROOT
timeout 200 python3 -m benchmarks.ab --base /tmp/rest --rounds 2 --sizes \
  64x256x512:float32:paired,64x256x512:float32,16x32x128:float32,40x128x384:float32,64x256x512:float64,1024x256x256:bfloat16 \
  > $OUT/d-ab.txt 2>&1
echo "ab rc=$?"; sed -n '/^size/,$p' $OUT/d-ab.txt
LLTM_JIT_CACHE_DIR=/tmp/cache-new timeout 120 python3 -m pytest -q -n 14 -p no:cacheprovider \
  tests/test_sequence.py tests/test_lstm_parity.py tests/test_amp.py -k "not cpu" > $OUT/d-tests.txt 2>&1
echo "tests rc=$?"; tail -n 15 $OUT/d-tests.txt | grep -E "FAILED|passed|failed"
run() { timeout 60 env "$@" >> $OUT/d-paired.txt 2>&1; }
run PYTHONPATH=/tmp/rest LLTM_JIT_CACHE_DIR=/tmp/cache-rest python3 $S36/paired.py rest
run LLTM_JIT_CACHE_DIR=/tmp/cache-new python3 $S36/paired.py interleaved
grep -E "^(rest|interleaved) " $OUT/d-paired.txt
LLTM_JIT_CACHE_DIR=/tmp/cache-new timeout 60 python3 $S36/paired.py interleaved check 2>&1 | grep check | tee $OUT/d-check.txt
