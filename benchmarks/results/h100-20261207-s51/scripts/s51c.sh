#!/usr/bin/env bash
# Session 51, call c: BackwardCells::step with every item's arithmetic first, branch-free
# (cells.patch, the working tree's change): the persistent backwards A/B against the tree without it,
# the streamed backward's phases with it (call b's probe: cells was 9.9k cycles of ~25k a step),
# and the persistent kernels' tests. ~4 min.
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
ROOT=$PWD; HERE=$ROOT/benchmarks/results/h100-20261207-s51/scripts
bash benchmarks/device_env.sh > $OUT/c-env.txt 2>&1; head -2 $OUT/c-env.txt
rm -rf /tmp/base /tmp/streamed && mkdir /tmp/base /tmp/streamed
cp -r lltm_jit src /tmp/base/ && (cd /tmp/base && patch -s -R -p1 < $HERE/cells.patch) || exit 1
cp -r lltm_jit src tests benchmarks /tmp/streamed/
(cd /tmp/streamed && patch -s -p1 < benchmarks/results/prepared-20261207-s50/scripts/streamed-backward.patch &&
 python3 $HERE/probe_backward.py src/tensor_core_streamed_backward.cuh) || exit 1
(cd /tmp/streamed && PYTHONPATH=/tmp/streamed LLTM_JIT_CACHE_DIR=/tmp/cache-streamed timeout 200 python3 -c "import lltm_jit") > $OUT/c-streamed-build.txt 2>&1 &
timeout 120 python3 -m benchmarks.ab --base /tmp/base --rounds 2 \
  --sizes 64x256x512:bfloat16:dx,128x512x512:float16:dx,64x1024x1024:float16:dx \
  > $OUT/c-ab.txt 2>&1
echo "ab rc=$? at ${SECONDS}s (base: main, new: cells.patch)"; sed -n '/^size/,$p' $OUT/c-ab.txt
wait; tail -1 $OUT/c-streamed-build.txt
(cd /tmp/streamed && PYTHONPATH=/tmp/streamed LLTM_JIT_CACHE_DIR=/tmp/cache-streamed timeout 120 python3 $HERE/run_probe.py streamed 2>&1) \
  | grep -v "^probe block.*T 0)" > $OUT/c-probe.txt
echo "probe rc=$? at ${SECONDS}s"; grep -A5 "backward 1" $OUT/c-probe.txt | grep -v "Warn\|warn" | head -24
timeout 100 python3 -m pytest -q -n 14 -p no:cacheprovider -k "persistent or tensor_cores or lengths or gradcheck" tests/test_sequence.py > $OUT/c-tests.txt 2>&1
echo "tests rc=$? at ${SECONDS}s"; grep -E "^(FAILED|ERROR)|passed|failed|Error" $OUT/c-tests.txt | tail -n 12
