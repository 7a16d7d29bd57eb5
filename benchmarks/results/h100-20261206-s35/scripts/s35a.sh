#!/usr/bin/env bash
# Session 35, on branch issue21-in-flight: the cold first import of the tree in a fresh cache
# (issue 20's 10 s), then benchmarks.ab of main (branch.patch reversed), main with the
# prologue's weight loads in flight (raw-inputs.patch reversed), the tree with session 33's
# load-first.patch and after-barrier.patch, and the tree (in flight + the backward's step inputs
# converted where read); then the CUDA tests of the sequence op on the tree and both variants.
set -uo pipefail
export PYTHONUNBUFFERED=1
ROOT=$PWD; S=$ROOT/benchmarks/results/h100-20261206-s35/scripts; S33=$ROOT/benchmarks/results/h200-20261205-s33/scripts
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
bash benchmarks/device_env.sh > $OUT/a-env.txt 2>&1
rm -rf /tmp/cold
LLTM_JIT_CACHE_DIR=/tmp/cold PYTHONPATH=$ROOT python3 - > $OUT/a-build.txt 2>&1 <<'PY'
import subprocess, sys, time
start = time.perf_counter()
subprocess.run([sys.executable, "-c", "import lltm_jit"], check=True)
print(f"cold import wall: {time.perf_counter() - start:.1f} s")
PY
LLTM_JIT_CACHE_DIR=/tmp/cold PYTHONPATH=$ROOT python3 -m lltm_jit info >> $OUT/a-build.txt 2>&1
grep -E "cold import|built in" $OUT/a-build.txt
L=$(find /tmp/cold -name .ninja_log | head -1)
awk 'NR>1 {printf "%6.1f %s\n", ($2-$1)/1000, $4}' $L | sort -rn > $OUT/a-ninja.txt
head -4 $OUT/a-ninja.txt
rm -rf /tmp/main /tmp/inflight /tmp/lf /tmp/abar && mkdir /tmp/main /tmp/inflight /tmp/lf /tmp/abar
cp -r lltm_jit src /tmp/main/ && (cd /tmp/main && patch -s -R -p1 < $S/branch.patch) || exit 1
cp -r lltm_jit src /tmp/inflight/ && (cd /tmp/inflight && patch -s -R -p1 < $S/raw-inputs.patch) || exit 1
cp -r lltm_jit src /tmp/lf/ && (cd /tmp/lf && patch -s -p1 < $S33/load-first.patch) || exit 1
cp -r lltm_jit src /tmp/abar/ && (cd /tmp/abar && patch -s -p1 < $S33/after-barrier.patch) || exit 1
grep -c "copy_to_shared" /tmp/main/src/persistent.cuh src/persistent.cuh
PYTHONPATH=$ROOT timeout 300 python3 -m benchmarks.ab --base /tmp/main --base /tmp/inflight --base /tmp/lf --base /tmp/abar \
  --rounds 2 --sizes 16x32x128:float32,64x256x512:float32,8x256x512:float16,8x128x256:float16,64x1024x1024:float16,64x256x512:bfloat16,128x512x512:float16 \
  > $OUT/a-ab.txt 2>&1
echo "ab rc=$?"
tail -15 $OUT/a-ab.txt
for tree in $ROOT /tmp/lf /tmp/abar; do
  name=$(basename $tree)
  # the tests import benchmarks.cases and benchmarks.precision (its Python files, not the records)
  [ $tree = $ROOT ] || { cp -r tests pyproject.toml $tree/ && mkdir -p $tree/benchmarks && cp benchmarks/*.py $tree/benchmarks/; }
  (cd $tree && PYTHONPATH=$tree LLTM_JIT_CACHE_DIR=/tmp/tests-$name timeout 230 python3 -m pytest -q -n 5 -p no:cacheprovider \
    tests/test_sequence.py tests/test_amp.py tests/test_lstm_parity.py -k "not cpu" \
    > $OUT/a-tests-$name.txt 2>&1; echo "tests $name rc=$?") &
done
wait
tail -n 2 $OUT/a-tests-*.txt
