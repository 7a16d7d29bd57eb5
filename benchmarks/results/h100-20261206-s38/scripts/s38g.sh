#!/usr/bin/env bash
# Session 38, prepared for the next session's first call (not run: no device time left), on the
# branch issue21-rows8-packs = main + hoist.patch (the branch issue21-gather-hoist: the paired
# forward's gather places computed once, before its steps) + rows8.patch (h_by_packs true: every
# forward reads h by packs). Call h's stages (200x256x256 fp32, every forward by packs): the
# product 172 us against main's 196, the gather 55 against 24, where the packs' gather divided by
# the runtime count of chunks at every step after the barrier. Predicted: the hoist takes the
# paired forwards to ~0.98 of main; with it, the 8-row forwards by packs come out at most main's.
# benchmarks.ab of main, the hoist and the tree; the sequence op's CUDA tests on the tree; the
# module rows (paired.py) of main and the hoist; the float64 check of the tree; the tree's stages.
set -uo pipefail
export PYTHONUNBUFFERED=1
ROOT=$PWD; HERE=$ROOT/benchmarks/results/h100-20261206-s38/scripts; S36=$ROOT/benchmarks/results/h100-20261206-s36/scripts
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
bash benchmarks/device_env.sh > $OUT/g-env.txt 2>&1
rm -rf /tmp/hoist /tmp/main && mkdir /tmp/hoist && cp -r lltm_jit src benchmarks /tmp/hoist/ \
  && (cd /tmp/hoist && patch -s -R -p1 < $HERE/rows8.patch) && cp -r /tmp/hoist /tmp/main \
  && (cd /tmp/main && patch -s -R -p1 < $HERE/hoist.patch) || exit 1
export PYTHONPATH=$ROOT
timeout 240 python3 -m benchmarks.ab --base /tmp/main --base /tmp/hoist --rounds 2 --sizes \
  64x256x512:float32:paired,32x128x256:float32:paired,200x256x256:float32,64x256x512:float32,40x128x384:float32,16x32x128:float32,64x256x512:float64 \
  > $OUT/g-ab.txt 2>&1
echo "ab rc=$?"; sed -n '/^size/,$p' $OUT/g-ab.txt
LLTM_JIT_CACHE_DIR=/tmp/cache-new timeout 100 python3 -m pytest -q -n 14 -p no:cacheprovider \
  tests/test_sequence.py tests/test_lstm_parity.py tests/test_amp.py -k "not cpu" > $OUT/g-tests.txt 2>&1
echo "tests rc=$?"; tail -n 15 $OUT/g-tests.txt | grep -E "FAILED|passed|failed"
run() { timeout 60 env "$@" >> $OUT/g-paired.txt 2>&1; }
for round in 1 2; do
  run PYTHONPATH=/tmp/main LLTM_JIT_CACHE_DIR=/tmp/cache-main python3 $S36/paired.py main
  run PYTHONPATH=/tmp/hoist LLTM_JIT_CACHE_DIR=/tmp/cache-hoist python3 $S36/paired.py hoist
done
grep -E "^(main|hoist) " $OUT/g-paired.txt
LLTM_JIT_CACHE_DIR=/tmp/cache-new timeout 60 python3 $S36/paired.py rows8 check 2>&1 | grep check | tee $OUT/g-check.txt
timeout 100 python3 -m benchmarks.stages --sizes 200x256x256:float32 --stages product,gather --rounds 1 \
  > $OUT/g-stages.txt 2>&1
echo "stages rc=$?"; grep -E "us$" $OUT/g-stages.txt
