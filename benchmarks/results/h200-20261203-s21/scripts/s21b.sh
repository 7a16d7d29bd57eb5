#!/usr/bin/env bash
# session 21 run b: where the 16x32x128 fp32 row's host time goes (alone on the machine this time),
# the table with the paired lanes and the forward's late stores, then the tests of the
# sequence op, the LSTM parity, the modules and autocast (their durations)
set -uo pipefail
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 LLTM_JIT_CACHE_DIR=/tmp/lltm-cache
S=benchmarks/results/h200-20261203-s21/scripts
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
  python3 -c "import torch; print('torch', torch.__version__, 'CUDA', torch.version.cuda, 'cuDNN', torch.backends.cudnn.version())"
  git log --oneline -1; git status --short | head -40; } > $OUT/b-env.txt 2>&1
python3 -m lltm_jit build > $OUT/b-build.txt 2>&1; python3 -m lltm_jit info >> $OUT/b-build.txt 2>&1
grep -E "built in" $OUT/b-build.txt | head -2
timeout 90 python3 $S/seq_host.py > $OUT/b-host.txt 2>&1; cut -c1-120 $OUT/b-host.txt
timeout 80 python3 bench.py --plan cudnn --budget 0.5 --out $OUT > $OUT/b-plan-cudnn.txt 2>&1
python3 $S/table.py $OUT/b-plan-cudnn.txt
timeout 320 python3 -m pytest -q -rfE -p no:cacheprovider -n 14 --timeout 300 --durations=12 tests/test_sequence.py \
  tests/test_lstm_parity.py tests/test_module.py tests/test_amp.py > $OUT/b-tests.txt 2>&1; echo "tests rc=$?"
pkill -f pytest; grep -E "FAILED|ERROR|passed|failed|^[0-9.]+s (call|setup)" $OUT/b-tests.txt | tail -30 | cut -c1-200
