#!/usr/bin/env bash
set -uo pipefail
export PYTHONUNBUFFERED=1
ROOT=$PWD
for tree in new old; do
  dir=$ROOT; [ $tree = old ] && dir=$ROOT/.gpu/old
  (cd $dir && PYTHONPATH=$dir LLTM_JIT_CACHE_DIR=/tmp/c-$tree python3 -c "import lltm_jit" 2>&1 | tail -1)
done
for i in 1 2; do for tree in new old; do for dt in float32 bfloat16; do
  dir=$ROOT; [ $tree = old ] && dir=$ROOT/.gpu/old
  (cd $dir && PYTHONPATH=$dir LLTM_JIT_CACHE_DIR=/tmp/c-$tree timeout 60 python3 $ROOT/.gpu/prof.py $dt $tree 2>&1 | grep -v Warning)
done; done; done
