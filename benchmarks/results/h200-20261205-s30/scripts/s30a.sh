#!/usr/bin/env bash
# Prepared in session 30 (no device lent), for the branch issue21-cta-fence: the tree is main with
# ctafence.patch (each block fences its own shared memory before arriving, so the shared bulk
# gather needs no fence of the cluster's: main's is a MEMBAR.ALL.GPU a step), and main is the
# tree with the patch reversed. (1) benchmarks.ab: main, main without the gather's fences (fences.py,
# the bound), the tree, at the sizes that gather through L2 and one cluster size as a control;
# (2) the CUDA tests of the sequence op, autocast and the LSTM-parity module on the tree; (3)
# bench.py's float16 rows through L2 against cuDNN; (4) the forward's phases with "send" split
# (phases30.py) on main and on the tree.
set -uo pipefail
export PYTHONUNBUFFERED=1
ROOT=$PWD; S=$ROOT/benchmarks/results/h200-20261205-s30/scripts
bash benchmarks/device_env.sh > $OUT/a-env.txt 2>&1
rm -rf /tmp/main /tmp/fv /tmp/ph /tmp/phm && mkdir /tmp/main /tmp/ph /tmp/phm
cp -r lltm_jit src /tmp/main/ && (cd /tmp/main && patch -s -R -p1 < $S/ctafence.patch) || exit 1
grep -c "operand_done_for_copies" /tmp/main/src/*.cuh src/tensor_core.cuh | tr '\n' ' '; echo
python3 $S/fences.py /tmp/fv /tmp/main
cp -r lltm_jit src /tmp/ph/ && python3 $S/phases30.py /tmp/ph
cp -r /tmp/main/lltm_jit /tmp/main/src /tmp/phm/ && python3 $S/phases30.py /tmp/phm
for d in ph phm; do
  (cd /tmp/$d && PYTHONPATH=/tmp/$d LLTM_JIT_CACHE_DIR=/tmp/$d-cache python3 -m lltm_jit build 2>&1 | grep "built in") &
done
PYTHONPATH=$ROOT timeout 300 python3 -m benchmarks.ab --base /tmp/main --base /tmp/fv/nofences --rounds 3 \
  --sizes 64x1024x1024:float16,16x512x1024:float16,64x256x512:bfloat16,1024x256x256:bfloat16,8x256x512:float16 \
  > $OUT/a-ab.txt 2>&1
echo "ab rc=$?"
wait
export PYTHONPATH=$ROOT
timeout 150 python3 -m pytest -q -n 12 -p no:cacheprovider tests/test_sequence.py tests/test_amp.py tests/test_lstm_parity.py \
  -k "not cpu" > $OUT/a-tests.txt 2>&1
echo "tests rc=$?"; tail -3 $OUT/a-tests.txt
timeout 120 python3 bench.py --kind sequence --sizes 64x1024x1024,16x512x1024:T128,128x512x512 --dtypes float16 \
  --backends lltm_jit,lstm --budget 0.5 --no-save > $OUT/a-bench.txt 2>&1
echo "bench rc=$?"
grep -E "^  (lltm_jit|lstm) |^sequence|x1024|x512" $OUT/a-bench.txt | tail -16
for d in phm ph; do
  (cd /tmp/$d && PYTHONPATH=/tmp/$d LLTM_JIT_CACHE_DIR=/tmp/$d-cache timeout 80 python3 $S/../../h200-20261205-s29/scripts/phases_run.py \
    64x1024x1024:float16:64 16x512x1024:float16:64 64x256x512:bfloat16:64 8x256x512:float16:256 8x128x256:float16:64) > $OUT/a-phases-$d-raw.txt 2>&1
  echo "== $d" >> $OUT/a-phases.txt
  python3 $S/../../h200-20261205-s29/scripts/phases_table.py $OUT/a-phases-$d-raw.txt >> $OUT/a-phases.txt 2>&1
  awk '/^== .* rep /{h=substr($0, 4)} /^PH[SB]/ && h ~ /rep 2/ {print h " | " $0}' $OUT/a-phases-$d-raw.txt >> $OUT/a-phases.txt
done
cat $OUT/a-phases.txt
sed -n '/^size /,$p' $OUT/a-ab.txt
