#!/usr/bin/env bash
# GPU job 2b: the char_lm example on one H200: plain, --amp, --compile, --amp --compile.
set -uo pipefail
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 LLTM_JIT_CACHE_DIR=/tmp/lltm-cache
A="--device cuda --steps ${STEPS:-500} --batch 256 --seq-len 128 --embed 64 --state 1024 --layers 2 --dropout 0.4 --eval-every 100"
for v in "" "--amp" "--compile" "--amp --compile"; do
  name=gpu1$(echo $v | tr -d ' -'); s=$SECONDS
  timeout 170 python3 examples/char_lm.py $A $v --out $OUT/$name > $OUT/$name.txt 2>$OUT/$name.err
  echo "$name rc=$? $((SECONDS-s)) s"; grep -E "^summary|validation loss" $OUT/$name.txt | tail -3
  rm -f $OUT/$name/checkpoint.pt
done
