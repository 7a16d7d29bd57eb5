#!/usr/bin/env bash
# Session 38, prepared for the next session's first call (not run: no device time left), on the
# branch issue21-rows8-packs (main + rows8.patch: h_by_packs true for every forward, so the
# forwards of 8 rows or fewer read h by packs as the paired one). Call a measured that layout
# 1.09 slower at 200x256x256 fp32 with the same tiling and a loop of 115-116 instructions a pack
# against 122; this splits both trees' forwards into stages (benchmarks.stages: the product, the
# gather) to say which part costs more, then benchmarks.ab of main against the branch.
# Predicted: the product no slower by packs (shorter loop); the gather (16-byte stores at a stride
# of R + 1 packs) or the update's partial sums (placed one row of h later) the part that is.
set -uo pipefail
export PYTHONUNBUFFERED=1
ROOT=$PWD; HERE=$ROOT/benchmarks/results/h100-20261206-s38/scripts
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
bash benchmarks/device_env.sh > $OUT/g-env.txt 2>&1
rm -rf /tmp/main && mkdir /tmp/main && cp -r lltm_jit src benchmarks /tmp/main/ \
  && (cd /tmp/main && patch -s -R -p1 < $HERE/rows8.patch) || exit 1
SIZES=200x256x256:float32,64x256x512:float32
for tree in /tmp/main $ROOT; do
  (cd $tree && PYTHONPATH=$tree timeout 200 python3 -m benchmarks.stages --sizes $SIZES --stages product,gather \
    --rounds 2 >> $OUT/g-stages.txt 2>&1)
  echo "stages $tree rc=$?"
done
grep -vE "^lltm_jit:" $OUT/g-stages.txt | tail -n 30
PYTHONPATH=$ROOT timeout 150 python3 -m benchmarks.ab --base /tmp/main --rounds 3 --sizes \
  200x256x256:float32,64x256x512:float32,40x128x384:float32,16x32x128:float32 > $OUT/g-ab.txt 2>&1
echo "ab rc=$?"; sed -n '/^size/,$p' $OUT/g-ab.txt
