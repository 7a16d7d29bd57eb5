#!/usr/bin/env bash
# Variants A (split kernels), B (+ batched exchange loads), C (= the tree: + loads a whole step ahead):
# build all three at once, tests on C, kernel profile of each.
set -uo pipefail
export PYTHONUNBUFFERED=1
ROOT=$PWD
dir_of() { [ $1 = C ] && echo $ROOT || echo $ROOT/.gpu/v$1; }
for v in A B C; do
  d=$(dir_of $v); (cd $d && PYTHONPATH=$d LLTM_JIT_CACHE_DIR=/tmp/c-$v python3 -c "import lltm_jit" > $OUT/build-$v.txt 2>&1; echo "build $v rc=$?") &
done; wait
s=$SECONDS; PYTHONPATH=$ROOT LLTM_JIT_CACHE_DIR=/tmp/c-C timeout 150 python3 -m pytest tests/test_sequence.py -q -x -p no:cacheprovider -k "cuda and not inductor" > $OUT/tests.txt 2>&1; echo "tests C rc=$? $((SECONDS-s)) s: $(tail -1 $OUT/tests.txt)"
grep -E "^FAILED|Error" $OUT/tests.txt | head -5
for round in 1 2; do for v in A B C; do for a in "16x32x128 float32" "64x256x512 float32"; do
  d=$(dir_of $v); echo "== $v $a"; (cd $d && PYTHONPATH=$d LLTM_JIT_CACHE_DIR=/tmp/c-$v timeout 60 python3 $ROOT/.gpu/prof7.py $a 2>&1 | grep -v -i warn | grep -E "wall|persistent" | cut -c1-110)
done; done; done | tee $OUT/prof.txt
(PYTHONPATH=$ROOT LLTM_JIT_CACHE_DIR=/tmp/c-C timeout 60 python3 .gpu/prof7.py 64x256x512 bfloat16 2>&1 | grep -E "wall|persistent" | cut -c1-110)
