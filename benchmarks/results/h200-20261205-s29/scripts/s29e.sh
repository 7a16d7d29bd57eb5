#!/usr/bin/env bash
# Session 29's fourth call, on the tree as it lands (the arrival at the block's scope and the held
# fragments; sum4.patch not kept, d-ab-table.txt): bench.py's other cuDNN plan, and the CUDA tests
# of the module and ops files (s29c/d ran the sequence, autocast and LSTM-parity files).
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
bash benchmarks/device_env.sh > $OUT/e-env.txt 2>&1
timeout 200 python3 bench.py --plan cudnn-other --budget 0.5 --out $OUT > $OUT/e-plan-cudnn-other.txt 2>&1
echo "plan rc=$?"
grep -E "^bars:|^  OVER" $OUT/e-plan-cudnn-other.txt
timeout 150 python3 -m pytest -q -n 12 -p no:cacheprovider tests/test_module.py tests/test_ops.py -k "not cpu" \
  > $OUT/e-tests.txt 2>&1
echo "tests rc=$?"; tail -2 $OUT/e-tests.txt
rm -f $OUT/*.png
