#!/usr/bin/env bash
# Session 28's third call: on main with the shared gather (and the host products where s28a.sh
# kept them), the packed input's no-wait test, then the GPU test files on 15 workers (the CPU- and
# compile-heavy tests, which CI runs on the CPU machine, apart: they time out beside the others).
set -uo pipefail
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 LLTM_JIT_CACHE_DIR=/tmp/lltm-cache
bash benchmarks/device_env.sh > $OUT/d-env.txt 2>&1
python3 -c "import lltm_jit" 2>&1 | tail -1
timeout 60 python3 -m pytest -q -p no:cacheprovider tests/test_lstm_parity.py -k "never_wait" > $OUT/d-nowait.txt 2>&1
echo "no-wait test rc=$?"; tail -2 $OUT/d-nowait.txt
timeout 400 python3 -m pytest -v -rfE -p no:cacheprovider -n 15 --timeout 300 -k "not cpu" \
  tests/test_sequence.py tests/test_ops.py tests/test_module.py tests/test_lstm_parity.py tests/test_amp.py \
  tests/test_errors.py > $OUT/d-tests.txt 2>&1
echo "GPU tests rc=$? (124: cut at the limit; each result is a line of d-tests.txt)"
grep -cE " PASSED" $OUT/d-tests.txt; grep -E " (FAILED|ERROR) |passed|failed" $OUT/d-tests.txt | tail -8
