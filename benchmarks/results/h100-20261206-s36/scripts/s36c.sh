#!/usr/bin/env bash
# Session 36, call c: the paired tree's cold build with python -m lltm_jit info (per-file times),
# then the plans' two bidirectional fp32 rows against cuDNN, and the tests of directions at once.
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD LLTM_JIT_CACHE_DIR=/tmp/cold
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
rm -rf /tmp/cold; /usr/bin/time -f "cold import %e s wall" python3 -c "import lltm_jit" > $OUT/c-build.txt 2>&1
python3 -m lltm_jit info > $OUT/c-info.txt 2>&1
tail -2 $OUT/c-build.txt; grep -iE "ops.cpp|persistent_(forward|backward)_f32|critical|built" $OUT/c-info.txt | head -8
timeout 150 python3 bench.py --kind sequence --sizes 64x256x512:T128:L2:bi,32x128x256:L2:bi --dtypes float32 \
  --backends lltm_jit,lstm --budget 0.5 --out $OUT > $OUT/c-bi.txt 2>&1
echo "bench rc=$?"; grep -A4 "^64x256x512\|^32x128x256" $OUT/c-bi.txt | grep -E "fwd|lltm_jit|lstm"
rm -f $OUT/*.png
timeout 60 python3 -m pytest -q -p no:cacheprovider tests/test_lstm_parity.py -k "at_once or tiling_for_two" > $OUT/c-tests.txt 2>&1
echo "tests rc=$?"; tail -n 1 $OUT/c-tests.txt
