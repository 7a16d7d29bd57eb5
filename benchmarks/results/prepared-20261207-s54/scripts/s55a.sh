#!/usr/bin/env bash
# Prepared in session 54 (no device machine was lent; not run): the step path's products beside its
# loops (beside.patch, over main 5ae398a, applied here to the device's copy; the tree before it is
# the base). LLTM_JIT_BESIDE=N runs the backward's d_input, d_weights and d_bias in chunks of N
# periods on a stream of their own as the loop finishes them, and float32's input projection a chunk
# ahead of the forward's loop; LLTM_JIT_BESIDE_HIGH=0 leaves the loops on the caller's stream (else
# one at the greatest priority; the products' stream has CUDA's least, the default, so with it off
# neither goes first); LLTM_JIT_BESIDE_SMS=66 asks cuBLAS to plan the backward's products for 66
# multiprocessors. Then the step path's CUDA tests with and without it, and one call's kernels by
# stream (beside_timeline.py). ~7 min on any GPU. Run from the repository root of an unpatched main.
# Predicted: the tests pass; 256x512x1024 bf16 fwd+bwd 0.85-0.92 of main with the products beside
# (~200-300 of their ~340 us hidden in the backward loop's ~620, that loop ~5% slower for them);
# float32 and TF32 less (their loops are busier), their forwards 0.95-1.00; the bf16 forward 1.00
# (the streamed kernel, unchanged). The timeline: the backward's step ~9.8 us alone and at most
# ~10.5 beside, the products' stream busy ~300 us, nearly all inside the loop's span.
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
HERE=$PWD/benchmarks/results/prepared-20261207-s54/scripts
bash benchmarks/device_env.sh > $OUT/a-env.txt 2>&1; head -2 $OUT/a-env.txt
rm -rf /tmp/base && mkdir /tmp/base && cp -r lltm_jit src /tmp/base/
patch -s -p1 < $HERE/beside.patch || { echo 'beside.patch does not apply'; exit 1; }
timeout 260 python3 -m benchmarks.ab --base /tmp/base --rounds 3 \
  --sizes 256x512x1024:bfloat16:dx,256x512x1024:float32:dx,256x512x1024:tf32:dx \
  --env LLTM_JIT_BESIDE=1 --env LLTM_JIT_BESIDE=2 --env LLTM_JIT_BESIDE=1,LLTM_JIT_BESIDE_HIGH=0 \
  --env LLTM_JIT_BESIDE=1,LLTM_JIT_BESIDE_SMS=66 > $OUT/a-ab.txt 2>&1
echo "ab rc=$? at ${SECONDS}s (base: main; new: beside.patch, off unless LLTM_JIT_BESIDE is set)"
sed -n '/^size/,$p' $OUT/a-ab.txt
export LLTM_JIT_CACHE_DIR=/tmp/cache-new
timeout 120 python3 -m pytest -q -p no:cacheprovider -k "step_path or beside" tests/test_sequence.py \
  > $OUT/a-tests.txt 2>&1
echo "tests rc=$? at ${SECONDS}s"; tail -n 5 $OUT/a-tests.txt | grep -E "FAILED|ERROR|passed|failed"
LLTM_JIT_BESIDE=1 timeout 60 python3 -m pytest -q -n 8 -p no:cacheprovider tests/test_sequence.py \
  -k "(step_path or parts or lengths) and not cpu and not tensor_cores and not gradcheck" \
  > $OUT/a-tests-beside.txt 2>&1
echo "tests with LLTM_JIT_BESIDE=1 rc=$? at ${SECONDS}s"
tail -n 5 $OUT/a-tests-beside.txt | grep -E "FAILED|ERROR|passed|failed"
timeout 60 python3 $HERE/beside_timeline.py 256x512x1024:bfloat16 0 1 2 > $OUT/a-timeline.txt 2>&1
echo "timeline bf16 rc=$? at ${SECONDS}s"
timeout 50 python3 $HERE/beside_timeline.py 256x512x1024:tf32 0 1 >> $OUT/a-timeline.txt 2>&1
echo "timeline tf32 rc=$? at ${SECONDS}s"; grep -v Warn $OUT/a-timeline.txt | head -40
