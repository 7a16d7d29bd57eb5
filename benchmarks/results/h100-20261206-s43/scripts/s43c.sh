#!/usr/bin/env bash
# Session 43, call c: the streamed forward's product software-pipelined (pipelined2.patch, the
# working tree: each k tile's fragments loaded one group of mma's ahead into registers no mma in
# flight reads, the next chunk's barrier between a chunk's two k tiles) against main (the patch
# reversed): benchmarks.ab at 256x512x1024 in both half types, the streamed tests, and bench.py
# against cuDNN at that size.
set -uo pipefail
export PYTHONUNBUFFERED=1
ROOT=$PWD; HERE=$ROOT/benchmarks/results/h100-20261206-s43/scripts
bash benchmarks/device_env.sh > $OUT/c-env.txt 2>&1; head -3 $OUT/c-env.txt
rm -rf /tmp/main && mkdir /tmp/main && cp -r lltm_jit src /tmp/main/ && (cd /tmp/main && patch -s -R -p1 < $HERE/pipelined2.patch) || exit 1
PYTHONPATH=$ROOT timeout 240 python3 -m benchmarks.ab --base /tmp/main --rounds 2 \
  --sizes 256x512x1024:bfloat16,256x512x1024:float16 > $OUT/c-ab.txt 2>&1
echo "ab rc=$?"; sed -n '/^size/,$p' $OUT/c-ab.txt
PYTHONPATH=$ROOT timeout 200 python3 -m pytest tests/test_sequence.py -q -x -n 8 -p no:cacheprovider \
  -k "streamed or long_sequence" > $OUT/c-tests.txt 2>&1
echo "tests rc=$?"; grep -E "^(FAILED|ERROR)|passed|failed" $OUT/c-tests.txt | tail -5
PYTHONPATH=$ROOT timeout 150 python3 bench.py --kind sequence --sizes 256x512x1024 --dtypes bfloat16,float16 \
  --backends lltm_jit,lstm --no-save --no-plot > $OUT/c-bench.txt 2>&1
echo "bench rc=$?"; tail -12 $OUT/c-bench.txt
