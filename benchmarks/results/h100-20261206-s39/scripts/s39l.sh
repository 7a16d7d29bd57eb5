#!/usr/bin/env bash
# Session 39, call l, on main 6a55247 (the reverse direction's side stream at the greatest
# priority; priority.patch is that commit's modules.py): the sequence op's and modules' CUDA tests;
# paired.py's module rows against the tree without it, alternated twice; the 2-layer row's fwd+bwd
# timeline; bench.py --plan cudnn and --plan cudnn-other.
set -uo pipefail
export PYTHONUNBUFFERED=1
ROOT=$PWD; HERE=$ROOT/benchmarks/results/h100-20261206-s39/scripts; S36=$ROOT/benchmarks/results/h100-20261206-s36/scripts
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
bash benchmarks/device_env.sh > $OUT/l-env.txt 2>&1
rm -rf /tmp/main && mkdir /tmp/main && cp -r lltm_jit src /tmp/main/ && (cd /tmp/main && patch -s -R -p1 < $HERE/priority.patch) || exit 1
export PYTHONPATH=$ROOT LLTM_JIT_CACHE_DIR=/tmp/cache
timeout 150 python3 -m pytest -q -n 14 -p no:cacheprovider \
  tests/test_sequence.py tests/test_lstm_parity.py tests/test_amp.py -k "not cpu" > $OUT/l-tests.txt 2>&1
echo "tests rc=$?"; tail -n 15 $OUT/l-tests.txt | grep -E "FAILED|passed|failed"
for round in 1 2; do
  PYTHONPATH=/tmp/main timeout 60 python3 $S36/paired.py before >> $OUT/l-paired.txt 2>&1
  timeout 60 python3 $S36/paired.py priority >> $OUT/l-paired.txt 2>&1
done
grep -E "^(before|priority) " $OUT/l-paired.txt | grep -v "one direction"
timeout 60 python3 $HERE/bidi_timeline.py priority fwd+bwd > $OUT/l-timeline-fwdbwd.txt 2>&1; grep span $OUT/l-timeline-fwdbwd.txt
sleep 5
timeout 150 python3 bench.py --plan cudnn --budget 0.5 --out $OUT > $OUT/l-plan-cudnn.txt 2>&1
echo "plan rc=$?"; grep -E "^bars:|^  OVER" $OUT/l-plan-cudnn.txt
timeout 150 python3 bench.py --plan cudnn-other --budget 0.5 --out $OUT > $OUT/l-plan-cudnn-other.txt 2>&1
echo "plan other rc=$?"; grep -E "^bars:|^  OVER" $OUT/l-plan-cudnn-other.txt
