#!/usr/bin/env bash
# A later session's call on the tree it keeps (after s26a.sh and s26b.sh have decided the two
# branches; session 27 had no device): the H200's cold first import (ops.cpp at -O1 since session
# 26), issue 21's rows and the same kinds at other sizes against cuDNN on a still quiet machine,
# the packed input's no-wait test, then the GPU test files on 15 workers (the CPU- and
# compile-heavy tests, which CI runs on the CPU machine, apart: they time out beside the others).
set -uo pipefail
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
bash benchmarks/device_env.sh > $OUT/c-env.txt 2>&1
export LLTM_JIT_CACHE_DIR=$(mktemp -d)
python3 - > $OUT/c-build.txt 2>&1 <<'PY'
import subprocess, sys, time
start = time.perf_counter()
subprocess.run([sys.executable, "-c", "import lltm_jit"], check=True)
print(f"cold import wall: {time.perf_counter() - start:.1f} s")
PY
python3 -m lltm_jit info >> $OUT/c-build.txt 2>&1
grep -E "cold import|built in|critical path" $OUT/c-build.txt | head -3
for plan in cudnn cudnn-other; do
  timeout 170 python3 bench.py --plan $plan --budget 0.5 --out $OUT > $OUT/c-plan-$plan.txt 2>&1
  echo "plan $plan rc=$?"
  grep -E "^[0-9].*(fwd|bwd)|^  lltm_jit |^  lstm " $OUT/c-plan-$plan.txt | paste - - - | sed -E 's/ +/ /g' | cut -c1-150
  grep -E "^bars:|^  OVER" $OUT/c-plan-$plan.txt
done
timeout 60 python3 -m pytest -q -p no:cacheprovider tests/test_lstm_parity.py -k "never_wait" > $OUT/c-nowait.txt 2>&1
echo "no-wait test rc=$?"; tail -2 $OUT/c-nowait.txt
timeout 320 python3 -m pytest -v -rfE -p no:cacheprovider -n 15 --timeout 250 -k "not cpu" \
  tests/test_sequence.py tests/test_ops.py tests/test_module.py tests/test_lstm_parity.py tests/test_amp.py \
  tests/test_errors.py > $OUT/c-tests.txt 2>&1
echo "GPU tests rc=$? (124: cut at the limit; each result is a line of c-tests.txt)"
grep -cE " PASSED" $OUT/c-tests.txt; grep -E " (FAILED|ERROR) |passed|failed" $OUT/c-tests.txt | tail -8
