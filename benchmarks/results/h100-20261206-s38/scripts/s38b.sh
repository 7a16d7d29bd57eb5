#!/usr/bin/env bash
# Session 38, call b, on the branch issue21-paired-packs (paired-packs.patch on main f87f516): the
# paired forward (16 rows) reads h by packs of the rows side by side (operand_pack, as the backward
# since f87f516) and gathers it along the exchange's rows (gather_packs); the forwards of 8 rows or
# fewer are main's (benchmarks.same_kernels: only persistent_forward_kernel<float,16> differs).
# Call a: by packs in every forward, the paired forward 0.965 of bab4119 and the 8-row ones up to
# 1.09-1.13. Predicted: paired forwards ~0.97 of main, the rest 1.00. benchmarks.ab, the sequence
# op's CUDA tests, the module rows alternated (paired.py), the float64 check, bench.py --plan cudnn.
set -uo pipefail
export PYTHONUNBUFFERED=1
ROOT=$PWD; HERE=$ROOT/benchmarks/results/h100-20261206-s38/scripts; S36=$ROOT/benchmarks/results/h100-20261206-s36/scripts
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
bash benchmarks/device_env.sh > $OUT/b-env.txt 2>&1
rm -rf /tmp/main && mkdir /tmp/main && cp -r lltm_jit src /tmp/main/ && (cd /tmp/main && patch -s -R -p1 < $HERE/paired-packs.patch) || exit 1
export PYTHONPATH=$ROOT
timeout 220 python3 -m benchmarks.ab --base /tmp/main --rounds 3 --sizes \
  64x256x512:float32:paired,32x128x256:float32:paired,40x128x384:float32:paired,64x256x512:float32,16x32x128:float32 \
  > $OUT/b-ab.txt 2>&1
echo "ab rc=$?"; sed -n '/^size/,$p' $OUT/b-ab.txt
LLTM_JIT_CACHE_DIR=/tmp/cache-new timeout 100 python3 -m pytest -q -n 14 -p no:cacheprovider \
  tests/test_sequence.py tests/test_lstm_parity.py tests/test_amp.py -k "not cpu" > $OUT/b-tests.txt 2>&1
echo "tests rc=$?"; tail -n 15 $OUT/b-tests.txt | grep -E "FAILED|passed|failed"
run() { timeout 60 env "$@" >> $OUT/b-paired.txt 2>&1; }
for round in 1 2; do
  run PYTHONPATH=/tmp/main LLTM_JIT_CACHE_DIR=/tmp/cache-main python3 $S36/paired.py main
  run LLTM_JIT_CACHE_DIR=/tmp/cache-new python3 $S36/paired.py packs
done
grep -E "^(main|packs) " $OUT/b-paired.txt
LLTM_JIT_CACHE_DIR=/tmp/cache-new timeout 60 python3 $S36/paired.py packs check 2>&1 | grep check | tee $OUT/b-check.txt
sleep 10  # the test workers' load off the machine before the plan's timings
LLTM_JIT_CACHE_DIR=/tmp/cache-new timeout 140 python3 bench.py --plan cudnn --budget 0.5 --out $OUT > $OUT/b-plan-cudnn.txt 2>&1
echo "plan rc=$?"; grep -E "^bars:|^  OVER" $OUT/b-plan-cudnn.txt
