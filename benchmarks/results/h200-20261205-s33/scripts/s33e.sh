#!/usr/bin/env bash
# Session 33, on branch issue21-in-flight (not run; for the next device call): benchmarks.ab of
# main (the tree with raw-inputs.patch and in-flight.patch reversed), main with the prologue's
# weight loads in flight (raw-inputs.patch reversed), the tree with load-first.patch (each
# update's next projection loaded before its stores: the stores' address registers held up the
# loads, by the SASS of the stall samples), the tree with after-barrier.patch (the CUDA-core
# forward's stores and loads after the step's barrier, off the path the other warps wait on),
# and the tree (both: the backward's step inputs converted where read, not at their loads); then
# the CUDA tests of the sequence op on the tree and on both variants.
set -uo pipefail
export PYTHONUNBUFFERED=1
ROOT=$PWD; S=$ROOT/benchmarks/results/h200-20261205-s33/scripts
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
bash benchmarks/device_env.sh > $OUT/e-env.txt 2>&1
rm -rf /tmp/main /tmp/inflight /tmp/lf /tmp/abar && mkdir /tmp/main /tmp/inflight /tmp/lf /tmp/abar
cp -r lltm_jit src /tmp/inflight/ && (cd /tmp/inflight && patch -s -R -p1 < $S/raw-inputs.patch) || exit 1
cp -r /tmp/inflight/lltm_jit /tmp/inflight/src /tmp/main/ && (cd /tmp/main && patch -s -R -p1 < $S/in-flight.patch) || exit 1
cp -r lltm_jit src /tmp/lf/ && (cd /tmp/lf && patch -s -p1 < $S/load-first.patch) || exit 1
cp -r lltm_jit src /tmp/abar/ && (cd /tmp/abar && patch -s -p1 < $S/after-barrier.patch) || exit 1
grep -c "copy_to_shared" /tmp/main/src/persistent.cuh src/persistent.cuh
PYTHONPATH=$ROOT timeout 300 python3 -m benchmarks.ab --base /tmp/main --base /tmp/inflight --base /tmp/lf --base /tmp/abar \
  --rounds 2 --sizes 16x32x128:float32,64x256x512:float32,8x256x512:float16,8x128x256:float16,64x1024x1024:float16,64x256x512:bfloat16,128x512x512:float16 \
  > $OUT/e-ab.txt 2>&1
echo "ab rc=$?"
tail -15 $OUT/e-ab.txt
for tree in $ROOT /tmp/lf /tmp/abar; do
  name=$(basename $tree)
  # the tests import benchmarks.cases and benchmarks.precision (its Python files, not the records)
  [ $tree = $ROOT ] || { cp -r tests pyproject.toml $tree/ && mkdir -p $tree/benchmarks && cp benchmarks/*.py $tree/benchmarks/; }
  (cd $tree && PYTHONPATH=$tree LLTM_JIT_CACHE_DIR=/tmp/tests-$name timeout 200 python3 -m pytest -q -n 5 -p no:cacheprovider \
    tests/test_sequence.py tests/test_amp.py tests/test_lstm_parity.py -k "not cpu" \
    > $OUT/e-tests-$name.txt 2>&1; echo "tests $name rc=$?") &
done
wait
tail -n 2 $OUT/e-tests-*.txt
