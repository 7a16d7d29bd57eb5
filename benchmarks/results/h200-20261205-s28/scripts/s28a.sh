#!/usr/bin/env bash
# Session 28's second call, after s27b.sh (results/h200-20261205-s28/b-*.txt) kept the shared
# gather (merged) and not the step chains. The working tree is main plus the host products
# (hp.patch, the diff of branch issue21-host-products); tree A is main alone (the patch reversed).
# On A: the H200's cold first import (ops.cpp at -O1, the kernel files without c10's headers),
# then both cuDNN plans. Between them, the host products' A/B on bench.py's own 16x32x128 fp32
# row (module, loss and autograd included, where ab.py's fwd+bwd is near its device time), A and
# this tree alternating, two rounds.
set -uo pipefail
export PYTHONUNBUFFERED=1
bash benchmarks/device_env.sh > $OUT/c-env.txt 2>&1
B=$PWD A=/tmp/tree-a
rm -rf $A && cp -r $B $A && (cd $A && git apply -R hp.patch) || exit 1
export LLTM_JIT_CACHE_DIR=/tmp/cache-a
cd $A && export PYTHONPATH=$A
python3 - > $OUT/c-build.txt 2>&1 <<'PY'
import subprocess, sys, time
start = time.perf_counter()
subprocess.run([sys.executable, "-c", "import lltm_jit"], check=True)
print(f"cold import wall: {time.perf_counter() - start:.1f} s")
PY
python3 -m lltm_jit info >> $OUT/c-build.txt 2>&1
grep -E "cold import|built in|critical path" $OUT/c-build.txt | head -3
(cd $B && PYTHONPATH=$B LLTM_JIT_CACHE_DIR=/tmp/cache-b python3 -c "import lltm_jit" 2>&1 | tail -1)
for round in 1 2; do
  for tree in $A $B; do
    echo "== round $round tree $([ $tree = $A ] && echo main || echo host-products)"
    (cd $tree && PYTHONPATH=$tree LLTM_JIT_CACHE_DIR=$([ $tree = $A ] && echo /tmp/cache-a || echo /tmp/cache-b) \
      timeout 100 python3 bench.py --kind sequence --sizes 16x32x128 --dtypes float32 --backends lltm_jit,lstm \
      --budget 1 --no-save 2>&1 | grep -E "^  (lltm_jit|lstm) |^== ")
  done
done > $OUT/c-hp.txt 2>&1
cat $OUT/c-hp.txt
for plan in cudnn cudnn-other; do
  timeout 170 python3 bench.py --plan $plan --budget 0.5 --out $OUT > $OUT/c-plan-$plan.txt 2>&1
  echo "plan $plan rc=$?"
  grep -E "^bars:|^  OVER" $OUT/c-plan-$plan.txt
done
rm -f $OUT/*.png
