#!/usr/bin/env bash
# Session 40, prepared for the next session's first call (not run: the device time was spent), on
# main (the commit that adds this script or later). Two patches on main:
# - takedh.patch (the branch issue21-take-dh-pass): the backward takes every item's shares from L2
#   in one pass over the tiles, not an item after the other (SASS: the two-item tensor-core
#   backwards without clusters 18 -> 3 spills at 32 rows, 6 -> 0 in the step loop; the cluster and
#   four-item kernels identical). Predicted: fwd+bwd 0.96-0.99 where a thread holds two items and
#   the tiles go through L2 (CUDA-core float32 and bf16, tensor-core rows without clusters), 1.00
#   elsewhere. Session 30-odd found runs of shares slower than a loop an item with two items
#   (tensor_core_backward.cuh's comment on add_shares): this is one pass, not runs.
# - zinit.patch (the branch issue21-forward-x-zeros): the forwards' projections value-initialised
#   (the four-item update copies those of items that are not valid). Every forward's SASS changes
#   (register allocation); predicted 1.00.
# benchmarks.ab of main (base0), takedh (base1), zinit (base2) and main again (new: the run's own
# spread), 3 rounds; the CUDA tests on takedh and zinit.
set -uo pipefail
export PYTHONUNBUFFERED=1
ROOT=$PWD; HERE=$ROOT/benchmarks/results/h100-20261206-s40/scripts
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
bash benchmarks/device_env.sh > $OUT/g-env.txt 2>&1
for t in main takedh zinit; do rm -rf /tmp/$t; mkdir /tmp/$t; cp -r lltm_jit src tests benchmarks pyproject.toml /tmp/$t/; done
(cd /tmp/takedh && patch -s -p1 < $HERE/takedh.patch) && (cd /tmp/zinit && patch -s -p1 < $HERE/zinit.patch) || exit 1
export PYTHONPATH=$ROOT
timeout 300 python3 -m benchmarks.ab --base /tmp/main --base /tmp/takedh --base /tmp/zinit --rounds 3 --sizes \
  64x256x512:float32,200x256x256:float32,40x128x384:float32,16x32x128:float32,64x256x512:bfloat16,16x512x1024:float16,128x512x512:float16,1024x256x256:bfloat16,8x256x512:float16,40x128x384:float64 \
  > $OUT/g-ab.txt 2>&1
echo "ab rc=$?"; sed -n '/^size/,$p' $OUT/g-ab.txt
for t in takedh zinit; do
  (cd /tmp/$t && PYTHONPATH=/tmp/$t LLTM_JIT_CACHE_DIR=/tmp/cache-$t timeout 100 python3 -m pytest -q -n 14 \
    -p no:cacheprovider tests/test_sequence.py tests/test_lstm_parity.py tests/test_amp.py -k "not cpu") \
    > $OUT/g-tests-$t.txt 2>&1
  echo "tests $t rc=$?"; tail -n 15 $OUT/g-tests-$t.txt | grep -E "FAILED|passed|failed"
done
