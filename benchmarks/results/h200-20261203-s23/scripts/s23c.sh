#!/usr/bin/env bash
# session 23 call c: HEAD; v2 = HEAD + v2.patch (call b's tree: v1 and the cluster forward's
# exchange through st.async and mbarriers); the working tree (v2 and the cluster backward's
# exchange likewise), timed in turn; the length sweep of the float16 rows; issue 21's rows; tests
set -uo pipefail
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 LLTM_JIT_CACHE_DIR=/tmp/lltm-cache
ROOT=$PWD; S=$ROOT/benchmarks/results/h200-20261203-s23/scripts
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
  python3 -c "import torch; print('torch', torch.__version__, 'CUDA', torch.version.cuda, 'cuDNN', torch.backends.cudnn.version())"
  git log --oneline -1; git status --short | head -40; } > $OUT/c-env.txt 2>&1
python3 -m lltm_jit build > $OUT/c-build.txt 2>&1; python3 -m lltm_jit info >> $OUT/c-build.txt 2>&1
grep -E "built in" $OUT/c-build.txt | head -2
rm -rf /tmp/v2 && mkdir /tmp/v2 && git archive HEAD lltm_jit src | tar -x -C /tmp/v2 && (patch -s -d /tmp/v2 -p1 < $S/v2.patch || (cd /tmp/v2 && git apply -p1 $S/v2.patch))
timeout 300 python3 -m benchmarks.ab --base HEAD --base /tmp/v2 --rounds 2 --sizes \
  8x256x512:float16,128x512x512:float16,64x1024x1024:float16,12x8x330:float16,600x8x256:bfloat16,16x64x128:bfloat16,64x256x512:float32 \
  > $OUT/c-ab.txt 2>&1
grep -E "fwd" $OUT/c-ab.txt | sort -k2,2 -k3,3 -k1,1 -s | awk '{print $1, $2, $3, $4}' | paste - - - - - -
timeout 120 python3 $S/sweep.py 8x256x512:float16 64x1024x1024:float16 > $OUT/c-sweep.txt 2>&1; grep "per step" $OUT/c-sweep.txt
timeout 120 python3 bench.py --plan cudnn --budget 0.5 --out $OUT > $OUT/c-plan-cudnn.txt 2>&1
grep -E "^[0-9].*(fwd|bwd)|^  lltm_jit " $OUT/c-plan-cudnn.txt | paste - - | cut -c1-150
timeout 230 python3 -m pytest -q -p no:cacheprovider -n 14 --timeout 200 tests/test_sequence.py tests/test_module.py \
  tests/test_amp.py tests/test_lstm_parity.py > $OUT/c-tests.txt 2>&1
echo "tests rc=$?"; grep -E "FAILED|ERROR" $OUT/c-tests.txt | head -10 | cut -c1-250; tail -2 $OUT/c-tests.txt | cut -c1-300
pkill -f pytest || true
