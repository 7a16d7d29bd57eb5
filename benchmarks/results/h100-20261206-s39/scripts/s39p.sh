#!/usr/bin/env bash
# Session 39, prepared for the next session's first call (not run: no device time left), on main
# (b7874bd or later, with this folder's scripts). Two experiments, each a patch on main:
# - light.patch (the branch issue21-row-walk-light): the step loops' divisions taken out where
#   clusters run them (the cluster backward's exchange, the cluster forward's sends, the held
#   forward's units); every kernel without a cluster compiles as main's. Call n's fuller walk
#   took the held forward to 0.866 at 8x256x512 fp16 but made the four-item kernels spill.
#   Predicted: 8x256x512 fp16 forward ~0.87 of main, the other cluster rows 0.95-1.00, the rows
#   without a cluster 1.00 (1024x256x256 bf16 among them).
# - paired-priority.patch (the branch issue21-paired-priority): paired persistent launches at the
#   device's least priority, so that both directions' input products run before either kernel.
#   Predicted: the 2-layer bidirectional 64x256x512 fp32 row's forward ~3 790 -> ~3 620 us.
#   With it, revfirst.patch too (prio-rev: the reverse direction issued first, which call k found
#   no better while the reverse kernel outranked the forward product): where the host issues the
#   reverse product late (layer 1), issuing it first puts both products before both kernels.
#   Predicted: ~3 500 us.
# benchmarks.ab of main (base0), light (base1) and main again (new: the run's own spread); the
# module rows (paired.py) of main, prio and prio-rev alternated twice and prio's forward
# timeline; the sequence op's and modules' CUDA tests on light and prio-rev.
set -uo pipefail
export PYTHONUNBUFFERED=1
ROOT=$PWD; HERE=$ROOT/benchmarks/results/h100-20261206-s39/scripts; S36=$ROOT/benchmarks/results/h100-20261206-s36/scripts
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
bash benchmarks/device_env.sh > $OUT/p-env.txt 2>&1
for t in main light prio prio-rev; do rm -rf /tmp/$t; mkdir /tmp/$t; cp -r lltm_jit src tests benchmarks pyproject.toml /tmp/$t/; done
(cd /tmp/light && patch -s -p1 < $HERE/light.patch) && (cd /tmp/prio && patch -s -p1 < $HERE/paired-priority.patch) \
  && (cd /tmp/prio-rev && patch -s -p1 < $HERE/paired-priority.patch && patch -s -p1 < $HERE/revfirst.patch) || exit 1
export PYTHONPATH=$ROOT
timeout 220 python3 -m benchmarks.ab --base /tmp/main --base /tmp/light --rounds 2 --sizes \
  8x256x512:float16,8x128x256:float16,128x512x512:float16,64x1024x1024:float16,1024x256x256:bfloat16,64x256x512:bfloat16 \
  > $OUT/p-ab.txt 2>&1
echo "ab rc=$?"; sed -n '/^size/,$p' $OUT/p-ab.txt
for round in 1 2; do
  for t in main prio prio-rev; do
    PYTHONPATH=/tmp/$t LLTM_JIT_CACHE_DIR=/tmp/cache-$t timeout 60 python3 $S36/paired.py $t >> $OUT/p-paired.txt 2>&1
  done
done
grep -E "^(main|prio|prio-rev) " $OUT/p-paired.txt | grep -v "one direction"
PYTHONPATH=/tmp/prio LLTM_JIT_CACHE_DIR=/tmp/cache-prio timeout 60 python3 $HERE/bidi_timeline.py prio fwd \
  > $OUT/p-timeline-prio.txt 2>&1; grep span $OUT/p-timeline-prio.txt
for t in light prio-rev; do
  (cd /tmp/$t && PYTHONPATH=/tmp/$t LLTM_JIT_CACHE_DIR=/tmp/cache-$t timeout 100 python3 -m pytest -q -n 14 \
    -p no:cacheprovider tests/test_sequence.py tests/test_lstm_parity.py tests/test_amp.py -k "not cpu") \
    > $OUT/p-tests-$t.txt 2>&1
  echo "tests $t rc=$?"; tail -n 15 $OUT/p-tests-$t.txt | grep -E "FAILED|passed|failed"
done
