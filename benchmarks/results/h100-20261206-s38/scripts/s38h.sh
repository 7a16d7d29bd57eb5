#!/usr/bin/env bash
# Session 38, call h (what the session's last 271 s of device time allow of s38g.sh), on the branch
# issue21-rows8-packs: the stages of 200x256x256 fp32 on main and on the branch, one round.
set -uo pipefail
export PYTHONUNBUFFERED=1
ROOT=$PWD; HERE=$ROOT/benchmarks/results/h100-20261206-s38/scripts
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
rm -rf /tmp/main && mkdir /tmp/main && cp -r lltm_jit src benchmarks /tmp/main/ \
  && (cd /tmp/main && patch -s -R -p1 < $HERE/rows8.patch) || exit 1
for tree in /tmp/main $ROOT; do
  echo "== $tree" >> $OUT/h-stages.txt
  (cd $tree && PYTHONPATH=$tree timeout 90 python3 -m benchmarks.stages --sizes 200x256x256:float32 \
    --stages product,gather --rounds 1 >> $OUT/h-stages.txt 2>&1)
  echo "stages $tree rc=$?"
done
grep -E "^==|us$" $OUT/h-stages.txt
