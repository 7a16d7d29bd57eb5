#!/usr/bin/env bash
# session 22 call b: a bidirectional layer's directions at once (each on a stream of its own)
# where the GPU holds both: the module's tests on CUDA, then the timing of at_once.py
set -uo pipefail
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 LLTM_JIT_CACHE_DIR=/tmp/lltm-cache
S=benchmarks/results/h200-20261203-s22/scripts
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
  python3 -c "import torch; print('torch', torch.__version__, 'CUDA', torch.version.cuda, 'cuDNN', torch.backends.cudnn.version())"
  git log --oneline -1; git status --short | head -40; } > $OUT/b-env.txt 2>&1
python3 -m lltm_jit build > $OUT/b-build.txt 2>&1; python3 -m lltm_jit info >> $OUT/b-build.txt 2>&1
grep -E "built in" $OUT/b-build.txt | head -2
timeout 200 python3 -m pytest -q -rfE -p no:cacheprovider -n 14 --timeout 180 tests/test_lstm_parity.py \
  tests/test_module.py tests/test_amp.py tests/test_errors.py > $OUT/b-tests.txt 2>&1; echo "tests rc=$?"
pkill -f pytest; grep -E "FAILED|ERROR|passed|failed" $OUT/b-tests.txt | tail -15 | cut -c1-250
timeout 200 python3 $S/at_once.py > $OUT/b-at-once.txt 2>&1; echo "at_once rc=$?"
cat $OUT/b-at-once.txt | cut -c1-140
