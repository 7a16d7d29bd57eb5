#!/usr/bin/env bash
# Final: the tree as committed (one zeros for both state gradients, no empty workspace): CUDA
# sequence tests, the 16x32x128 row four times, the whole sequence bench once.
set -uo pipefail
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 LLTM_JIT_CACHE_DIR=/tmp/lltm-g
{ date -u +%Y-%m-%dT%H:%M:%SZ; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c "import torch; print('torch', torch.__version__, 'CUDA', torch.version.cuda, 'cuDNN', torch.backends.cudnn.version())"; } > $OUT/env.txt 2>&1
python3 -c "import lltm_jit; print(lltm_jit.build_info()['key'])" > $OUT/build.txt 2>&1 || { tail -30 $OUT/build.txt; exit 1; }
s=$SECONDS; timeout 120 python3 -m pytest tests/test_sequence.py tests/test_lstm_parity.py tests/test_amp.py -q -p no:cacheprovider -k "cuda" > $OUT/tests.txt 2>&1; echo "tests rc=$? $((SECONDS-s)) s: $(tail -1 $OUT/tests.txt)"
grep -E "^FAILED|^ERROR" $OUT/tests.txt | head -5
for i in 1 2 3 4; do
  timeout 60 python3 bench.py --kind sequence --sizes 16x32x128 --dtypes float32 --no-save > $OUT/row-$i.txt 2>/dev/null
  echo "run $i: $(grep -A4 'fwd+bwd: floor' $OUT/row-$i.txt | grep -E '^  (lltm_jit|lstm) ' | awk '{printf "%s %s us (t/lstm %s)  ", $1, $2, $6}')"
done
s=$SECONDS; timeout 130 python3 bench.py --kind sequence --no-save > $OUT/bench-sequence.txt 2>/dev/null; echo "bench rc=$? $((SECONDS-s)) s"
grep -A5 "fwd+bwd: floor" $OUT/bench-sequence.txt | grep -E "floor|^  (lltm_jit|lstm) "
