#!/usr/bin/env bash
# Session 49, call f: split-K in the backward alone, as landed (the forward's split of calls d-e
# taken out: with one part its TF32 forwards ran 1.02-1.07x main). The CUDA tests of the sequence
# op, LSTM parity, modules and autocast; benchmarks.ab, base main against the tree, 3 rounds; then
# bench.py --plan cudnn in one process while time lasts. Predicted: every forward as main
# (0.98-1.02), fwd+bwd 0.95-0.98 where the backward splits (batch up to 256), as main at 2048x128x256.
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
ROOT=$PWD; HERE=$ROOT/benchmarks/results/h100-20261207-s49/scripts
bash benchmarks/device_env.sh > $OUT/f-env.txt 2>&1; head -2 $OUT/f-env.txt
rm -rf /tmp/base && mkdir /tmp/base && cp -r lltm_jit src /tmp/base/
(cd /tmp/base && patch -s -R -p1 < $HERE/split.patch) || exit 1
export LLTM_JIT_CACHE_DIR=/tmp/cache
(timeout 200 python3 -m lltm_jit build > /dev/null 2>&1) &
(cd /tmp/base && PYTHONPATH=/tmp/base LLTM_JIT_CACHE_DIR=/tmp/cache-base timeout 200 python3 -m lltm_jit build > /dev/null 2>&1) &
wait
timeout 150 python3 -m pytest -q -n 14 -p no:cacheprovider -k "not cpu" tests/test_sequence.py tests/test_lstm_parity.py \
  tests/test_module.py tests/test_amp.py > $OUT/f-tests.txt 2>&1
echo "tests rc=$? at ${SECONDS}s"; grep -E "^(FAILED|ERROR)|passed|failed" $OUT/f-tests.txt | tail -n 12
timeout 200 python3 -m benchmarks.ab --base /tmp/base --rounds 3 \
  --sizes 256x512x1024:tf32:dx,512x256x512:tf32:dx,256x512x1024:float32:dx,2048x128x256:bfloat16:dx,128x1024x1024:bfloat16:dx,256x512x1024:bfloat16:dx \
  > $OUT/f-ab.txt 2>&1
echo "ab rc=$? at ${SECONDS}s (base: main, new: split)"; sed -n '/^size/,$p' $OUT/f-ab.txt
if [ $SECONDS -lt 300 ]; then
  mkdir -p $OUT/plan
  timeout 60 python3 bench.py --plan cudnn --budget 0.5 --out $OUT/plan > $OUT/f-plan.txt 2>&1
  echo "plan rc=$? at ${SECONDS}s"; rm -f $OUT/plan/*.png
  grep -E "^bars:|met|OVER" $OUT/f-plan.txt | tail -n 23
fi
