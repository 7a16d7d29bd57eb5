#!/usr/bin/env bash
# Session 37, prepared for the next call on the branch issue21-forward-packs (~250 s): the
# product's operand by packs in both directions with the forward's gather along the exchange's
# rows (packs.patch on main: thread t takes chunk t % chunks of every (threads / chunks)-th row,
# so that a warp's 16-byte loads cover one run, as main's flat copy), against main, the backward's
# part alone (backward.patch) and call d's tree (interleaved.patch: the gather in the operand's
# order, a warp's loads over 16 rows). Predicted: the gather's order is what made call d's
# forwards slower (1.05-1.12), so this tree's forwards ~0.97 of main, its paired backward ~0.95.
# benchmarks.ab, the sequence op's CUDA tests, the module rows (paired.py), the float64 check;
# then both cuDNN plans on main (issue 21's rows; ~230 s more, ~480 s in all).
set -uo pipefail
export PYTHONUNBUFFERED=1
ROOT=$PWD; HERE=$ROOT/benchmarks/results/h100-20261206-s37/scripts; S36=$ROOT/benchmarks/results/h100-20261206-s36/scripts
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
bash benchmarks/device_env.sh > $OUT/f-env.txt 2>&1
rm -rf /tmp/main /tmp/backward /tmp/interleaved && mkdir /tmp/main && cp -r lltm_jit src /tmp/main/ \
  && (cd /tmp/main && patch -s -R -p1 < $HERE/packs.patch) || exit 1
for v in backward interleaved; do
  cp -r /tmp/main /tmp/$v && (cd /tmp/$v && patch -s -p1 < $HERE/$v.patch) || exit 1
done
export PYTHONPATH=$ROOT
timeout 240 python3 -m benchmarks.ab --base /tmp/main --base /tmp/backward --base /tmp/interleaved --rounds 2 --sizes \
  64x256x512:float32:paired,64x256x512:float32,16x32x128:float32,40x128x384:float32,200x256x256:float32,64x256x512:float64 \
  > $OUT/f-ab.txt 2>&1
echo "ab rc=$?"; sed -n '/^size/,$p' $OUT/f-ab.txt
LLTM_JIT_CACHE_DIR=/tmp/cache-new timeout 100 python3 -m pytest -q -n 14 -p no:cacheprovider \
  tests/test_sequence.py tests/test_lstm_parity.py tests/test_amp.py -k "not cpu" > $OUT/f-tests.txt 2>&1
echo "tests rc=$?"; tail -n 15 $OUT/f-tests.txt | grep -E "FAILED|passed|failed"
run() { timeout 60 env "$@" >> $OUT/f-paired.txt 2>&1; }
run PYTHONPATH=/tmp/main LLTM_JIT_CACHE_DIR=/tmp/cache-main python3 $S36/paired.py main
run LLTM_JIT_CACHE_DIR=/tmp/cache-new python3 $S36/paired.py packs
grep -E "^(main|packs) " $OUT/f-paired.txt
LLTM_JIT_CACHE_DIR=/tmp/cache-new timeout 60 python3 $S36/paired.py packs check 2>&1 | grep check | tee $OUT/f-check.txt
sleep 15  # the test workers' load off the machine before the plans' timings
cp bench.py /tmp/main/ && cp -r benchmarks /tmp/main/
for plan in cudnn cudnn-other; do
  (cd /tmp/main && PYTHONPATH=/tmp/main LLTM_JIT_CACHE_DIR=/tmp/cache-main timeout 140 python3 bench.py --plan $plan \
    --budget 0.5 --out $OUT > $OUT/f-plan-$plan.txt 2>&1)
  echo "plan $plan rc=$?"; grep -E "^bars:|^  OVER" $OUT/f-plan-$plan.txt
done
