#!/usr/bin/env bash
# Session 42, call a: the streamed forward (tensor_core_streamed.cuh), first run. The cold build and
# its per-file times; errors against float64 by output (check_streamed.py); the new tests and
# those of which kernel runs; benchmarks.ab of the tree as it is (streamed where nothing else fits)
# against LLTM_JIT_SEQUENCE_KERNEL=step (the per-step path, main's at these sizes) and =streamed
# (forced at 128x1024x1024, where the tensor-core tiling fits); bench.py against cuDNN.
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
HERE=benchmarks/results/h100-20261206-s42/scripts
bash benchmarks/device_env.sh > $OUT/a-env.txt 2>&1; head -3 $OUT/a-env.txt
export LLTM_JIT_CACHE_DIR=/tmp/cache-a
{ /usr/bin/time -f "cold build wall %e s" python3 -c "import lltm_jit"; python3 -m lltm_jit info; } > $OUT/a-build.txt 2>&1
grep -E "wall|error" $OUT/a-build.txt | head
timeout 120 python3 $HERE/check_streamed.py > $OUT/a-check.txt 2>&1; echo "check rc=$?"; cat $OUT/a-check.txt | tail -12
timeout 200 python3 -m pytest -q -n 8 --timeout 100 -p no:cacheprovider tests/test_sequence.py \
  -k "streamed or which_persistent or fall_back or peak_memory" > $OUT/a-tests.txt 2>&1
echo "tests rc=$?"; grep -E "FAILED|passed|failed|Error" $OUT/a-tests.txt | tail -15
timeout 200 python3 -m benchmarks.ab --base . --rounds 2 \
  --sizes 256x512x1024:bfloat16,256x512x1024:float16,128x1024x1024:bfloat16 \
  --env LLTM_JIT_SEQUENCE_KERNEL=step --env LLTM_JIT_SEQUENCE_KERNEL=streamed > $OUT/a-ab.txt 2>&1
echo "ab rc=$?"; sed -n '/^size/,$p' $OUT/a-ab.txt
timeout 120 python3 bench.py --kind sequence --sizes 256x512x1024 --dtypes bfloat16,float16 --backends lltm_jit,lstm \
  --no-save --no-plot > $OUT/a-bench.txt 2>&1
echo "bench rc=$?"; tail -20 $OUT/a-bench.txt
