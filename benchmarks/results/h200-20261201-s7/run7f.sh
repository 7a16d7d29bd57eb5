#!/usr/bin/env bash
# The 16x32x128 fp32 sequence row, four more full-backend runs, and one of CUDA graph replays.
set -uo pipefail
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 LLTM_JIT_CACHE_DIR=/tmp/lltm-final
python3 -c "import lltm_jit" > /dev/null 2>&1 || exit 1
for i in 1 2 3 4; do
  timeout 60 python3 bench.py --kind sequence --sizes 16x32x128 --dtypes float32 --no-save > $OUT/row-$i.txt 2>/dev/null
  echo "run $i: $(grep -A4 'fwd+bwd: floor' $OUT/row-$i.txt | grep -E '^  (lltm_jit|lstm) ' | awk '{printf "%s %s us (t/lstm %s)  ", $1, $2, $6}')"
done
timeout 90 python3 bench.py --kind sequence --graphs --backends lltm_jit,lstm --no-save > $OUT/graphs.txt 2>/dev/null
grep -E "floor|lltm_jit |lstm " $OUT/graphs.txt | grep -v backend
