#!/usr/bin/env bash
# session 24 call b: the working tree (the forward's gather through L2 on the bulk copy engine,
# its copies now issued by one thread; bench's bfloat16 nn.LSTM flattened) against HEAD; issue
# 21's rows; the CUDA tests of the kernels, the module, autocast, the ops and the errors
set -uo pipefail
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 LLTM_JIT_CACHE_DIR=/tmp/lltm-cache
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
  python3 -c "import torch; print('torch', torch.__version__, 'CUDA', torch.version.cuda, 'cuDNN', torch.backends.cudnn.version())"
  git log --oneline -1; git status --short | head -40; } > $OUT/b-env.txt 2>&1
python3 -m lltm_jit build > $OUT/b-build.txt 2>&1; python3 -m lltm_jit info >> $OUT/b-build.txt 2>&1
grep -E "built in" $OUT/b-build.txt | head -2
timeout 120 python3 -m benchmarks.ab --base HEAD --rounds 2 --sizes \
  32x8x1400:bfloat16,64x1024x1024:float16,600x8x256:bfloat16,40x8x512:float16 > $OUT/b-ab.txt 2>&1
echo "ab rc=$?"; grep -E "fwd" $OUT/b-ab.txt | sort -k2,2 -k3,3 -k1,1 -s | awk '{print $1, $2, $3, $4}' | paste - - - -
timeout 150 python3 bench.py --plan cudnn --budget 0.5 --out $OUT > $OUT/b-plan-cudnn.txt 2>&1
grep -E "^[0-9].*(fwd|bwd)|^  lltm_jit |^  lstm " $OUT/b-plan-cudnn.txt | paste - - - | cut -c1-200; grep -c contiguous $OUT/b-plan-cudnn.txt
timeout 270 python3 -m pytest -q -p no:cacheprovider -n 14 --timeout 250 tests/test_sequence.py tests/test_module.py \
  tests/test_amp.py tests/test_lstm_parity.py tests/test_errors.py tests/test_ops.py > $OUT/b-tests.txt 2>&1
echo "tests rc=$?"; grep -E "FAILED|ERROR" $OUT/b-tests.txt | head -10 | cut -c1-250; tail -2 $OUT/b-tests.txt | cut -c1-300
pkill -f pytest || true
