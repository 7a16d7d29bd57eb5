#!/usr/bin/env bash
# Session 39, call k: the bidirectional module's launch order. Call j's timeline (the 2-layer
# 64x256x512 fp32 row's forward, profiled) had the reverse direction's input product running
# beside the forward direction's persistent kernel, on the SMs that kernel leaves (292 us against
# 157 alone in layer 1, 1039 against 525 in layer 2), so the reverse recurrence started when the
# forward one was half done: the layer took GEMM + GEMM' + 2 recurrences, not GEMM x 2 + 1.
# Trees: main; prio (prio.patch: the side stream at high priority, so that the reverse
# direction's product takes the SMs first); rev (revfirst.patch: the reverse direction issued
# first); both. paired.py's module rows alternated twice; each tree's forward timeline; the
# tests and the float64 check on `both`.
set -uo pipefail
export PYTHONUNBUFFERED=1
ROOT=$PWD; HERE=$ROOT/benchmarks/results/h100-20261206-s39/scripts; S36=$ROOT/benchmarks/results/h100-20261206-s36/scripts
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
bash benchmarks/device_env.sh > $OUT/k-env.txt 2>&1
for t in main prio rev both; do rm -rf /tmp/$t; mkdir /tmp/$t; cp -r lltm_jit src /tmp/$t/; done
(cd /tmp/prio && patch -s -p1 < $HERE/prio.patch) && (cd /tmp/rev && patch -s -p1 < $HERE/revfirst.patch) \
  && (cd /tmp/both && patch -s -p1 < $HERE/prio.patch && patch -s -p1 < $HERE/revfirst.patch) || exit 1
export LLTM_JIT_CACHE_DIR=/tmp/cache
PYTHONPATH=/tmp/main python3 -c "import lltm_jit" > $OUT/k-build.txt 2>&1
for round in 1 2; do
  for t in main prio rev both; do
    PYTHONPATH=/tmp/$t timeout 60 python3 $S36/paired.py $t >> $OUT/k-paired.txt 2>&1
  done
done
grep -E "^(main|prio|rev|both) " $OUT/k-paired.txt | grep -v "one direction"
for t in main prio rev both; do
  PYTHONPATH=/tmp/$t timeout 60 python3 $HERE/bidi_timeline.py $t fwd > $OUT/k-timeline-$t.txt 2>&1
  grep span $OUT/k-timeline-$t.txt
done
PYTHONPATH=/tmp/both timeout 60 python3 $S36/paired.py both check 2>&1 | grep check | tee $OUT/k-check.txt
cp -r tests pyproject.toml /tmp/both/ && (cd /tmp/both && PYTHONPATH=/tmp/both timeout 120 python3 -m pytest -q -n 14 \
  -p no:cacheprovider tests/test_sequence.py tests/test_lstm_parity.py tests/test_amp.py -k "not cpu") > $OUT/k-tests.txt 2>&1
echo "tests rc=$?"; tail -n 15 $OUT/k-tests.txt | grep -E "FAILED|passed|failed"
