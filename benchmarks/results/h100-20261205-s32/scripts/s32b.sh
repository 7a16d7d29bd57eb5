#!/usr/bin/env bash
# Session 32, on the branch issue21-ahead: the tree reads the forward's input projection and the
# backward's step inputs two steps ahead (ahead-fwd.patch, ahead-bwd.patch). (1) benchmarks.ab:
# main (both patches reversed), main with the forward's alone, the tree; (2) the CUDA tests of the
# sequence op, autocast and the LSTM-parity module on the tree; (3) the phases with the wait for
# the step's inputs timed apart (phases32.py) on main and on the tree.
set -uo pipefail
export PYTHONUNBUFFERED=1
ROOT=$PWD; S=$ROOT/benchmarks/results/h100-20261205-s32/scripts
P29=$ROOT/benchmarks/results/h200-20261205-s29/scripts
bash benchmarks/device_env.sh > $OUT/b-env.txt 2>&1
rm -rf /tmp/main /tmp/fwd /tmp/ph /tmp/phm && mkdir /tmp/main /tmp/fwd /tmp/ph /tmp/phm
cp -r lltm_jit src /tmp/fwd/ && (cd /tmp/fwd && patch -s -R -p1 < $S/ahead-bwd.patch) || exit 1
cp -r /tmp/fwd/lltm_jit /tmp/fwd/src /tmp/main/ && (cd /tmp/main && patch -s -R -p1 < $S/ahead-fwd.patch) || exit 1
grep -c "next\[" /tmp/main/src/persistent_*.cuh /tmp/fwd/src/persistent_*.cuh src/persistent_*.cuh | tr '\n' ' '; echo
cp -r lltm_jit src /tmp/ph/ && python3 $S/phases32.py /tmp/ph
cp -r /tmp/main/lltm_jit /tmp/main/src /tmp/phm/ && python3 $S/phases32.py /tmp/phm
for d in ph phm; do
  (cd /tmp/$d && PYTHONPATH=/tmp/$d LLTM_JIT_CACHE_DIR=/tmp/$d-cache python3 -m lltm_jit build 2>&1 | grep "built in") &
done
PYTHONPATH=$ROOT timeout 300 python3 -m benchmarks.ab --base /tmp/main --base /tmp/fwd --rounds 3 \
  --sizes 8x256x512:float16,8x128x256:float16,64x1024x1024:float16,16x512x1024:float16,64x256x512:bfloat16,1024x256x256:bfloat16,64x256x512:float32,16x32x128:float32 \
  > $OUT/b-ab.txt 2>&1
echo "ab rc=$?"
wait
export PYTHONPATH=$ROOT
timeout 150 python3 -m pytest -q -n 12 -p no:cacheprovider tests/test_sequence.py tests/test_amp.py tests/test_lstm_parity.py \
  -k "not cpu" > $OUT/b-tests.txt 2>&1
echo "tests rc=$?"; tail -2 $OUT/b-tests.txt
for d in phm ph; do
  (cd /tmp/$d && PYTHONPATH=/tmp/$d LLTM_JIT_CACHE_DIR=/tmp/$d-cache timeout 80 python3 $P29/phases_run.py \
    8x256x512:float16:256 8x128x256:float16:64 64x1024x1024:float16:64 16x512x1024:float16:64 64x256x512:bfloat16:64) \
    > $OUT/b-phases-$d-raw.txt 2>&1
  echo "== $d" >> $OUT/b-phases.txt
  python3 $P29/phases_table.py $OUT/b-phases-$d-raw.txt >> $OUT/b-phases.txt 2>&1
  awk '/^== .* rep /{h=substr($0, 4)} /^PH[SBW]/ && h ~ /rep 2/ {print h " | " $0}' $OUT/b-phases-$d-raw.txt >> $OUT/b-phases.txt
done
grep -E "wall|PHW|PHS" $OUT/b-phases.txt | cut -c1-150
sed -n '/^size /,$p' $OUT/b-ab.txt
