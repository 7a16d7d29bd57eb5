#!/usr/bin/env bash
# Session 49, call d: split-K as landed (the working tree over main 20623f6, split.patch the
# difference): the backward's d_gates W_h in parts at a batch up to 256 (4 for the half types, 8
# for float32/float64), the forward's h W_h^T in 2 parts for float32/float64 without TF32 at up to
# 2^20 outputs. The cold build and info's per-file times; the CUDA tests of the sequence op, LSTM
# parity, ops, modules, autocast and loader; benchmarks.ab, base main against the tree; then
# bench.py --plan cudnn in two processes judged together and --plan cudnn-other, while time lasts.
# Predicted: call c's fwd+bwd gains where the backward splits (0.96-0.98), 2048x128x256 and
# 512x256x512 tf32 as main (no split there now); float32's forward 0.94-0.96 at 256x512x1024 and
# 0.88-0.92 at 512x256x512 (products alone 49.2 -> 45.1 and 28.9 -> 24.6 us a step).
# (Re-run on a copy of the tree, as the device has: this applies split-forward.patch to the
# tree, call e's form of the forward's split; call d's read part 0 in the loop with the others.)
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
ROOT=$PWD; HERE=$ROOT/benchmarks/results/h100-20261207-s49/scripts
bash benchmarks/device_env.sh > $OUT/d-env.txt 2>&1; head -2 $OUT/d-env.txt
rm -rf /tmp/base && mkdir /tmp/base && cp -r lltm_jit src /tmp/base/
(cd /tmp/base && patch -s -R -p1 < $HERE/split.patch) || exit 1
patch -s -p1 < $HERE/split-forward.patch || exit 1
rm -rf /tmp/cache
{ time LLTM_JIT_CACHE_DIR=/tmp/cache python3 -c "import lltm_jit"; } > $OUT/d-build.txt 2>&1
LLTM_JIT_CACHE_DIR=/tmp/cache python3 -m lltm_jit info >> $OUT/d-build.txt 2>&1
grep -E "built in|^real" $OUT/d-build.txt
export LLTM_JIT_CACHE_DIR=/tmp/cache
(cd /tmp/base && PYTHONPATH=/tmp/base LLTM_JIT_CACHE_DIR=/tmp/cache-base timeout 200 python3 -m lltm_jit build > /dev/null 2>&1) &
timeout 240 python3 -m pytest -q -n 14 -p no:cacheprovider -k "not cpu" tests/test_sequence.py tests/test_lstm_parity.py \
  tests/test_module.py tests/test_ops.py tests/test_amp.py tests/test_loader.py > $OUT/d-tests.txt 2>&1
echo "tests rc=$? at ${SECONDS}s"; grep -E "^(FAILED|ERROR)|passed|failed" $OUT/d-tests.txt | tail -n 12
wait
timeout 200 python3 -m benchmarks.ab --base /tmp/base --rounds 2 \
  --sizes 256x512x1024:bfloat16:dx,128x1024x1024:bfloat16:dx,2048x128x256:bfloat16:dx,256x512x1024:float32:dx,256x512x1024:tf32:dx,512x256x512:float32:dx,512x256x512:tf32:dx \
  > $OUT/d-ab.txt 2>&1
echo "ab rc=$? at ${SECONDS}s (base: main, new: split)"; sed -n '/^size/,$p' $OUT/d-ab.txt
for run in 1 2; do
  [ $SECONDS -gt 470 ] && break
  mkdir -p $OUT/plan$run
  echo "== plan cudnn, process $run" >> $OUT/d-plans.txt
  timeout 60 python3 bench.py --plan cudnn --budget 0.5 --out $OUT/plan$run >> $OUT/d-plans.txt 2>&1
  echo "plan $run rc=$? at ${SECONDS}s"
done
if [ $SECONDS -lt 520 ]; then
  echo "== plan cudnn-other" >> $OUT/d-plans.txt
  timeout 65 python3 bench.py --plan cudnn-other --budget 0.5 --out $OUT >> $OUT/d-plans.txt 2>&1
  echo "plan other rc=$? at ${SECONDS}s"
fi
rm -f $OUT/*.png $OUT/plan*/*.png
grep -E "^bars:" $OUT/d-plans.txt
echo "== judge" >> $OUT/d-plans.txt
python3 bench.py --judge $OUT/plan*/*.json 2>&1 | tee -a $OUT/d-plans.txt | tail -n 24
