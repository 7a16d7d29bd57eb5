#!/usr/bin/env bash
# Session 43, call e (prepared, not run): two products whose SASS has no mma wait for a load issued
# after it (scripts/ctrl_bits.py), against main (the working tree) at 256x512x1024:
#  - after-second: pipelined2.patch + after-second.patch (the next chunk's first loads after the
#    second k tile's mma's: in pipelined2 they shared a scoreboard with that tile's loads);
#  - quarters2: quarters2.patch (a warp of all 64 rows and one k tile a chunk, 7 loads for 24
#    mma's, the barrier between the two halves of its mma's, the next chunk's loads after them;
#    the sums in three rounds).
# The step's phases (probe_phases.py; main's product: 11.6k cycles in call d), benchmarks.ab,
# and each variant's streamed and long-sequence tests.
set -uo pipefail
export PYTHONUNBUFFERED=1
ROOT=$PWD; HERE=$ROOT/benchmarks/results/h100-20261206-s43/scripts; S23=$ROOT/benchmarks/results/h200-20261203-s23/scripts
bash benchmarks/device_env.sh > $OUT/e-env.txt 2>&1; head -2 $OUT/e-env.txt
rm -rf /tmp/after-second /tmp/quarters2 && mkdir /tmp/after-second /tmp/quarters2
for v in after-second quarters2; do cp -r lltm_jit src tests benchmarks /tmp/$v/; done
(cd /tmp/after-second && patch -s -p1 < $HERE/pipelined2.patch && patch -s -p1 < $HERE/after-second.patch) || exit 1
(cd /tmp/quarters2 && patch -s -p1 < $HERE/quarters2.patch) || exit 1
for v in main after-second quarters2; do
  src=$ROOT; [ $v = main ] || src=/tmp/$v
  rm -rf /tmp/probe-$v && mkdir /tmp/probe-$v && cp -r $src/lltm_jit $src/src /tmp/probe-$v/
  (cd /tmp/probe-$v && python3 $HERE/probe_phases.py src/tensor_core_streamed.cuh) || exit 1
  echo "== $v" >> $OUT/e-probe.txt
  (cd /tmp/probe-$v && PYTHONPATH=/tmp/probe-$v LLTM_JIT_CACHE_DIR=/tmp/cache-probe-$v timeout 60 \
    python3 $S23/one_forward.py 256 512 1024 bfloat16 64) 2>&1 | grep probe >> $OUT/e-probe.txt
done
cat $OUT/e-probe.txt
PYTHONPATH=$ROOT timeout 240 python3 -m benchmarks.ab --base /tmp/after-second --base /tmp/quarters2 --rounds 2 \
  --sizes 256x512x1024:bfloat16,256x512x1024:float16 > $OUT/e-ab.txt 2>&1
echo "ab rc=$?"; sed -n '/^size/,$p' $OUT/e-ab.txt
for v in after-second quarters2; do
  echo "== $v" >> $OUT/e-tests.txt
  (cd /tmp/$v && PYTHONPATH=/tmp/$v LLTM_JIT_CACHE_DIR=/tmp/cache-$v timeout 150 python3 -m pytest tests/test_sequence.py \
    -q -n 8 -p no:cacheprovider -k "streamed or long_sequence") 2>&1 | grep -E "^(FAILED|ERROR)|passed|failed" >> $OUT/e-tests.txt
done
cat $OUT/e-tests.txt
