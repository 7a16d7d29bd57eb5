#!/usr/bin/env bash
# session 23 call d: v3 = HEAD + v3.patch (this session's commits 1dc5cd1..5f91985 as of the call:
# the projection after the arrival, W_h in 16-byte loads, the clusters' mbarriers) against the
# working tree (v3 and the forward's gather without a division an element), timed in turn; issue
# 21's rows; the sequence tests
set -uo pipefail
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 LLTM_JIT_CACHE_DIR=/tmp/lltm-cache
ROOT=$PWD; S=$ROOT/benchmarks/results/h200-20261203-s23/scripts
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
  python3 -c "import torch; print('torch', torch.__version__, 'CUDA', torch.version.cuda, 'cuDNN', torch.backends.cudnn.version())"
  git log --oneline -1; git status --short | head -40; } > $OUT/d-env.txt 2>&1
python3 -m lltm_jit build > $OUT/d-build.txt 2>&1; python3 -m lltm_jit info >> $OUT/d-build.txt 2>&1
grep -E "built in" $OUT/d-build.txt | head -2
rm -rf /tmp/v3 && mkdir /tmp/v3 && git archive HEAD lltm_jit src | tar -x -C /tmp/v3 && (patch -s -d /tmp/v3 -p1 < $S/v3.patch || (cd /tmp/v3 && git apply -p1 $S/v3.patch))
timeout 240 python3 -m benchmarks.ab --base /tmp/v3 --rounds 2 --sizes \
  64x1024x1024:float16,1024x256x256:bfloat16,64x512x512:bfloat16,64x256x512:float32,32x128x256:float32,8x256x512:float16 \
  > $OUT/d-ab.txt 2>&1
grep -E "fwd" $OUT/d-ab.txt | sort -k2,2 -k3,3 -k1,1 -s | awk '{print $1, $2, $3, $4}' | paste - - - -
timeout 120 python3 bench.py --plan cudnn --budget 0.5 --out $OUT > $OUT/d-plan-cudnn.txt 2>&1
grep -E "^[0-9].*(fwd|bwd)|^  lltm_jit " $OUT/d-plan-cudnn.txt | paste - - | cut -c1-150
timeout 150 python3 -m pytest -q -p no:cacheprovider -n 14 --timeout 120 tests/test_sequence.py -k "not cpu" \
  > $OUT/d-tests.txt 2>&1
echo "tests rc=$?"; grep -E "FAILED|ERROR" $OUT/d-tests.txt | head -10 | cut -c1-250; tail -2 $OUT/d-tests.txt | cut -c1-300
pkill -f pytest || true
