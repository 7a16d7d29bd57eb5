#!/usr/bin/env bash
# Prepared in session 51 (not run: the session's device time went to failed starts). The streamed
# forward's epilogue with every pair's arithmetic first, straight through (epilogue.patch over
# main 9a1dcc6 and later): today each of a thread's 4 pairs computes its 2 cells under its own
# branch, so the pairs' chains of dependent instructions run one after another (the SASS: MUFU's
# in 4 clumps; with the patch spread over the whole epilogue). The same change took the streamed
# backward's cells from 9.9k to 6.1k cycles a step (session 51, call c). Runs on a copy of the tree,
# as the device has: it patches the tree in place and keeps an unpatched copy for the A/B. ~5 min.
# In order: benchmarks.ab at 256x512x1024 (the streamed forward by default), then forced streamed
# on both sides at 128x1024x1024 and 256x256x768; the SS step's phases with the patch
# (probe_phases.py of session 43, probe_ss.py of session 49: session 49 found the epilogue
# 3.19-3.86k cycles of ~15k at 256x512x1024 bf16); the streamed and long-sequence tests; every
# kernel of a 256x512x1024 bf16 training step (profile_step.py: the backward's step path, whose
# fwd+bwd less forward, ~1 245 us on an H100, is ~850 us of the four largest kernels).
# Predicted: the epilogue ~1.5k cycles shorter, forwards at 256x512x1024 ~0.93 of main.
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
ROOT=$PWD; HERE=$ROOT/benchmarks/results/prepared-20261207-s51/scripts
S43=$ROOT/benchmarks/results/h100-20261206-s43/scripts; S49=$ROOT/benchmarks/results/h100-20261207-s49/scripts
S23=$ROOT/benchmarks/results/h200-20261203-s23/scripts
bash benchmarks/device_env.sh > $OUT/a-env.txt 2>&1; head -2 $OUT/a-env.txt
rm -rf /tmp/base /tmp/probe && mkdir /tmp/base /tmp/probe && cp -r lltm_jit src /tmp/base/
patch -s -p1 < $HERE/epilogue.patch || exit 1
cp -r lltm_jit src /tmp/probe/
(cd /tmp/probe && python3 $S43/probe_phases.py src/tensor_core_streamed.cuh && python3 $S49/probe_ss.py src/tensor_core_streamed.cuh) || exit 1
(cd /tmp/probe && PYTHONPATH=/tmp/probe LLTM_JIT_CACHE_DIR=/tmp/cache-probe timeout 200 python3 -m lltm_jit build > $OUT/a-build-probe.txt 2>&1) &
timeout 200 python3 -m benchmarks.ab --base /tmp/base --rounds 3 \
  --sizes 256x512x1024:bfloat16:dx,256x512x1024:float16:dx > $OUT/a-ab.txt 2>&1
echo "ab rc=$? at ${SECONDS}s (base: main, new: epilogue.patch)"; sed -n '/^size/,$p' $OUT/a-ab.txt
LLTM_JIT_SEQUENCE_KERNEL=streamed timeout 200 python3 -m benchmarks.ab --base /tmp/base --rounds 2 \
  --sizes 128x1024x1024:bfloat16:dx,256x256x768:bfloat16:dx > $OUT/a-ab-forced.txt 2>&1
echo "ab forced rc=$? at ${SECONDS}s (both sides LLTM_JIT_SEQUENCE_KERNEL=streamed)"; sed -n '/^size/,$p' $OUT/a-ab-forced.txt
wait; grep -E "built in" $OUT/a-build-probe.txt
for args in "256 512 1024 bfloat16 64" "256 512 1024 float16 64"; do
  echo "== $args" >> $OUT/a-probe.txt
  (cd /tmp/probe && PYTHONPATH=/tmp/probe LLTM_JIT_CACHE_DIR=/tmp/cache-probe timeout 60 python3 $S23/one_forward.py $args) 2>&1 | grep probe >> $OUT/a-probe.txt
done
sed 's/per step cycles: //' $OUT/a-probe.txt
timeout 200 python3 -m pytest -q -n 14 -p no:cacheprovider -k "streamed or long_sequence" \
  tests/test_sequence.py > $OUT/a-tests.txt 2>&1
echo "tests rc=$? at ${SECONDS}s"; grep -E "^(FAILED|ERROR)|passed|failed|Error" $OUT/a-tests.txt | tail -n 12
timeout 90 python3 benchmarks/profile_step.py --kind sequence --size 256x512x1024 --dtype bfloat16 > $OUT/a-profile.txt 2>&1
echo "profile rc=$? at ${SECONDS}s"; head -n 30 $OUT/a-profile.txt
