#!/usr/bin/env bash
# Session 49, call c: the step path's backward product split over k (split-K, the working tree
# over main 20623f6; split.patch is the difference, which this script takes back out for the
# base). The CUDA tests of the sequence op, LSTM parity, modules and autocast on the working tree;
# then benchmarks.ab, base main against the tree, at the step path's sizes of issue 21's plans, with
# the input's gradient (bench.py's rows take it). Predicted from call b's products alone (7.4 ->
# 5.7 us a step at 256x512x1024 bf16, less ~0.3 us for the kernel's reads of the parts): fwd+bwd
# 0.93-0.96 of main there; 128x1024x1024 bf16 0.90-0.94; float32 0.96-0.98; forwards unchanged.
# (Call c ran an earlier state of split.patch: the backward in parts wherever batch x state <=
# 2^20, not only at a batch up to 256.)
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
ROOT=$PWD; HERE=$ROOT/benchmarks/results/h100-20261207-s49/scripts
bash benchmarks/device_env.sh > $OUT/c-env.txt 2>&1; head -2 $OUT/c-env.txt
rm -rf /tmp/base && mkdir /tmp/base && cp -r lltm_jit src /tmp/base/
(cd /tmp/base && patch -s -R -p1 < $HERE/split.patch) || exit 1
export LLTM_JIT_CACHE_DIR=/tmp/cache
(timeout 200 python3 -m lltm_jit build > $OUT/c-build.txt 2>&1; echo "build rc=$?") &
(cd /tmp/base && PYTHONPATH=/tmp/base LLTM_JIT_CACHE_DIR=/tmp/cache-base timeout 200 python3 -m lltm_jit build > /dev/null 2>&1) &
wait; grep -E "built in" $OUT/c-build.txt
timeout 240 python3 -m pytest -q -n 14 -p no:cacheprovider -k "not cpu" tests/test_sequence.py tests/test_lstm_parity.py \
  tests/test_module.py tests/test_amp.py > $OUT/c-tests.txt 2>&1
echo "tests rc=$? at ${SECONDS}s"; grep -E "^(FAILED|ERROR)|passed|failed" $OUT/c-tests.txt | tail -n 12
timeout 300 python3 -m benchmarks.ab --base /tmp/base --rounds 2 \
  --sizes 256x512x1024:bfloat16:dx,128x1024x1024:bfloat16:dx,512x512x768:bfloat16:dx,2048x128x256:bfloat16:dx,256x512x1024:float32:dx,256x512x1024:tf32:dx,512x256x512:float32:dx,512x256x512:tf32:dx \
  > $OUT/c-ab.txt 2>&1
echo "ab rc=$? at ${SECONDS}s (base: main, new: split)"; sed -n '/^size/,$p' $OUT/c-ab.txt
