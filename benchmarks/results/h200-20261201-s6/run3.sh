#!/usr/bin/env bash
# GPU job 3: old (b385f20) vs new sequence op, interleaved, same machine.
set -uo pipefail
export PYTHONUNBUFFERED=1
ROOT=$PWD
B="--kind sequence --sizes 16x32x128,64x256x512,256x512x1024 --dtypes float32,bfloat16 --backends lltm_jit,lstm --no-save --repeats 60"
for tree in new old; do
  dir=$ROOT; [ $tree = old ] && dir=$ROOT/.gpu/old
  (cd $dir && PYTHONPATH=$dir LLTM_JIT_CACHE_DIR=/tmp/c-$tree python3 -c "import lltm_jit; print('$tree', lltm_jit.build_info()['key'])") 2>&1 | tail -1
done
for i in 1 2; do for tree in new old; do
  dir=$ROOT; [ $tree = old ] && dir=$ROOT/.gpu/old
  s=$SECONDS; (cd $dir && PYTHONPATH=$dir LLTM_JIT_CACHE_DIR=/tmp/c-$tree timeout 140 python3 bench.py $B > $OUT/bench-$tree-$i.txt 2>/dev/null); echo "$tree $i rc=$? $((SECONDS-s)) s"
done; done
for f in $OUT/bench-*.txt; do echo "== $f"; grep -E "floor|lltm_jit |lstm " $f | grep -v backend; done
