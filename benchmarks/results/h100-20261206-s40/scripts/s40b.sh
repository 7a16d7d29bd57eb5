#!/usr/bin/env bash
# Session 40, call b, on the branch issue21-sums-together (main + sums.patch: the forwards add the
# three gates' partial sums in one pass over the slices). Four trees: main (the tree less
# sums.patch), light (main + session 39's light.patch: the cluster kernels' step loops walked
# without divisions), both (the tree + light.patch) and the tree itself. Call a (session 39's
# s39p.sh) had light at 0.93 of main at 8x256x512 fp16's forward in a noisy run (main against
# itself 1.04). Predicted: sums 0.96-0.99 of main on the tensor-core forwards (the held forward at
# 8x256x512 fp16 the most), 0.99-1.00 on the CUDA-core ones; light as in call a. benchmarks.ab,
# 3 rounds; the sequence op's and modules' CUDA tests on both.
set -uo pipefail
export PYTHONUNBUFFERED=1
ROOT=$PWD; HERE=$ROOT/benchmarks/results/h100-20261206-s40/scripts; S39=$ROOT/benchmarks/results/h100-20261206-s39/scripts
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
bash benchmarks/device_env.sh > $OUT/b-env.txt 2>&1
for t in main light both; do rm -rf /tmp/$t; mkdir /tmp/$t; cp -r lltm_jit src tests benchmarks pyproject.toml /tmp/$t/; done
(cd /tmp/main && patch -s -R -p1 < $HERE/sums.patch) && (cd /tmp/light && patch -s -R -p1 < $HERE/sums.patch \
  && patch -s -p1 < $S39/light.patch) && (cd /tmp/both && patch -s -p1 < $S39/light.patch) || exit 1
export PYTHONPATH=$ROOT
timeout 330 python3 -m benchmarks.ab --base /tmp/main --base /tmp/light --base /tmp/both --rounds 3 --sizes \
  8x256x512:float16,8x128x256:float16,16x512x1024:float16,64x1024x1024:float16,128x512x512:float16,1024x256x256:bfloat16,64x256x512:bfloat16,16x32x128:float32,64x256x512:float32,40x128x384:float64 \
  > $OUT/b-ab.txt 2>&1
echo "ab rc=$?"; sed -n '/^size/,$p' $OUT/b-ab.txt
(cd /tmp/both && PYTHONPATH=/tmp/both LLTM_JIT_CACHE_DIR=/tmp/cache-both timeout 100 python3 -m pytest -q -n 14 \
  -p no:cacheprovider tests/test_sequence.py tests/test_lstm_parity.py tests/test_amp.py -k "not cpu") \
  > $OUT/b-tests-both.txt 2>&1
echo "tests both rc=$?"; tail -n 15 $OUT/b-tests-both.txt | grep -E "FAILED|passed|failed"
