#!/usr/bin/env bash
# Session 36, call a: the paired tiling (groups of up to 16 rows, so that a bidirectional layer's
# two launches fit at once at 64x256x512 fp32) against main: correctness against the float64
# reference at odd sizes, module timings (ABA), the sequence op's CUDA tests.
# P=b: call b, the same on the paired forward of 256 threads (its outputs b-*).
set -uo pipefail
export PYTHONUNBUFFERED=1
P=${P:-a}; ROOT=$PWD; S=$ROOT/benchmarks/results/h100-20261206-s36/scripts
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
bash benchmarks/device_env.sh > $OUT/$P-env.txt 2>&1
rm -rf /tmp/main && mkdir /tmp/main && cp -r lltm_jit src /tmp/main/ && (cd /tmp/main && patch -s -R -p1 < $S/paired.patch) || exit 1
export LLTM_JIT_CACHE_DIR=/tmp/cache-new PYTHONPATH=$ROOT
(cd /tmp/main && LLTM_JIT_CACHE_DIR=/tmp/cache-main python3 -c "import lltm_jit" > $OUT/$P-build-main.txt 2>&1) &
python3 -c "import lltm_jit" > $OUT/$P-build-new.txt 2>&1; wait
tail -1 $OUT/$P-build-new.txt $OUT/$P-build-main.txt
timeout 100 python3 $S/paired.py paired check 2>&1 | tee $OUT/$P-check.txt | grep check
run() { timeout 80 env "$@" >> $OUT/$P-paired.txt 2>&1; }
run PYTHONPATH=/tmp/main LLTM_JIT_CACHE_DIR=/tmp/cache-main python3 $S/paired.py main
run python3 $S/paired.py paired
run LLTM_JIT_SEQUENCES_AT_ONCE=0 python3 $S/paired.py in-turn
run PYTHONPATH=/tmp/main LLTM_JIT_CACHE_DIR=/tmp/cache-main python3 $S/paired.py main
cat $OUT/$P-paired.txt
timeout 120 python3 -m pytest -q -n 14 -p no:cacheprovider \
  tests/test_sequence.py tests/test_lstm_parity.py tests/test_amp.py -k "not cpu" > $OUT/$P-tests.txt 2>&1
echo "tests rc=$?"; tail -n 15 $OUT/$P-tests.txt | grep -E "FAILED|passed|failed"
