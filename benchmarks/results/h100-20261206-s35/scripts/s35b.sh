#!/usr/bin/env bash
# Session 35, call b, on branch issue21-s35 (main + the backward's step inputs converted where
# read + the CUDA-core forward's stores after the step's barrier; session 33's prologue loads in
# flight left out, 1.05x slower at 16x32x128 fp32 in call a): benchmarks.ab of main (s35.patch
# reversed) and the tree with tc-after.patch (the tensor-core forward's stores and loads after the
# step's wait and barrier too) against the tree; the sequence op's CUDA tests on both; then
# bench.py --plan cudnn on the tree.
set -uo pipefail
export PYTHONUNBUFFERED=1
ROOT=$PWD; S=$ROOT/benchmarks/results/h100-20261206-s35/scripts
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
bash benchmarks/device_env.sh > $OUT/b-env.txt 2>&1
rm -rf /tmp/main /tmp/tcafter && mkdir /tmp/main /tmp/tcafter
cp -r lltm_jit src /tmp/main/ && (cd /tmp/main && patch -s -R -p1 < $S/s35.patch) || exit 1
cp -r lltm_jit src /tmp/tcafter/ && (cd /tmp/tcafter && patch -s -p1 < $S/tc-after.patch) || exit 1
PYTHONPATH=$ROOT timeout 170 python3 -m benchmarks.ab --base /tmp/main --base /tmp/tcafter --rounds 2 \
  --sizes 16x32x128:float32,64x256x512:float32,32x64x128:float64,8x256x512:float16,8x128x256:float16,64x1024x1024:float16,64x256x512:bfloat16,128x512x512:float16,1024x256x256:bfloat16,16x512x1024:float16 \
  > $OUT/b-ab.txt 2>&1
echo "ab rc=$?"
tail -22 $OUT/b-ab.txt
for tree in $ROOT /tmp/tcafter; do
  name=$(basename $tree)
  [ $tree = $ROOT ] || { cp -r tests pyproject.toml $tree/ && mkdir -p $tree/benchmarks && cp benchmarks/*.py $tree/benchmarks/; }
  (cd $tree && PYTHONPATH=$tree LLTM_JIT_CACHE_DIR=/tmp/tests-$name timeout 130 python3 -m pytest -q -n 7 -p no:cacheprovider \
    tests/test_sequence.py tests/test_amp.py tests/test_lstm_parity.py -k "not cpu" \
    > $OUT/b-tests-$name.txt 2>&1; echo "tests $name rc=$?") &
done
wait
for f in $OUT/b-tests-*.txt; do echo "$f: $(grep -E 'passed|failed' $f | tail -1)"; done
timeout 80 python3 bench.py --plan cudnn --budget 0.5 --out $OUT > $OUT/b-plan-cudnn.txt 2>&1
echo "plan rc=$?"
grep -E "^bars:|^  OVER|^  met" $OUT/b-plan-cudnn.txt
rm -f $OUT/*.png
