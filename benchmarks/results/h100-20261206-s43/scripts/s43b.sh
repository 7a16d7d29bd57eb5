#!/usr/bin/env bash
# Session 43, call b: the streamed forward's product pipelined (pipelined.patch, the working tree:
# W's fragments of the next chunk loaded while this one's mma's run, the chunk barrier after the
# mma's are issued, h's fragments of both k tiles loaded at once), and over it quarters.patch
# (each warp every row and a quarter of each chunk's k tiles: 7 ldmatrix for 24 mma's instead of
# 10, the sums meeting in three rounds), against main (pipelined.patch reversed): their tests,
# and benchmarks.ab at 256x512x1024 in both half types; mma_rate.cu fixed (its shared memory
# within the 227 KB).
set -uo pipefail
export PYTHONUNBUFFERED=1
ROOT=$PWD; HERE=$ROOT/benchmarks/results/h100-20261206-s43/scripts
bash benchmarks/device_env.sh > $OUT/b-env.txt 2>&1; head -3 $OUT/b-env.txt
(cd /tmp && nvcc -O3 -arch=sm_90a -o mma_rate $HERE/mma_rate.cu && timeout 60 ./mma_rate) > $OUT/b-mma-rate.txt 2>&1
echo "mma_rate rc=$?"; cat $OUT/b-mma-rate.txt
rm -rf /tmp/main /tmp/quarters && mkdir /tmp/main /tmp/quarters && cp -r lltm_jit src /tmp/main/ && cp -r lltm_jit src tests /tmp/quarters/
(cd /tmp/main && patch -s -R -p1 < $HERE/pipelined.patch) || exit 1
(cd /tmp/quarters && patch -s -p1 < $HERE/quarters.patch) || exit 1
for tree in $ROOT /tmp/quarters; do
  (cd $tree && PYTHONPATH=$tree LLTM_JIT_CACHE_DIR=/tmp/cache-$(basename $tree) timeout 200 python3 -m pytest tests/test_sequence.py \
    -q -x -n 8 -p no:cacheprovider -k "streamed or long_sequence" 2>&1 | tail -3) >> $OUT/b-tests.txt
  echo "tests $tree: $(tail -1 $OUT/b-tests.txt)"
done
PYTHONPATH=$ROOT timeout 300 python3 -m benchmarks.ab --base /tmp/main --base /tmp/quarters --rounds 2 \
  --sizes 256x512x1024:bfloat16,256x512x1024:float16 > $OUT/b-ab.txt 2>&1
echo "ab rc=$?"; sed -n '/^size/,$p' $OUT/b-ab.txt
