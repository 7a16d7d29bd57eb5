#!/usr/bin/env bash
# session 24 call c: HEAD; bulk-everywhere (HEAD + bulk-everywhere.patch: the forward's gather
# through L2 on the bulk copy engine wherever the rows are whole 16 bytes, issued by warp 0's
# lanes after a warp-wide poll); the working tree (the same, only where the loads would take more
# than two rounds); the tensor-core tests; issue 21's rows
set -uo pipefail
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 LLTM_JIT_CACHE_DIR=/tmp/lltm-cache
ROOT=$PWD; S=$ROOT/benchmarks/results/h200-20261203-s24/scripts
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
  python3 -c "import torch; print('torch', torch.__version__, 'CUDA', torch.version.cuda, 'cuDNN', torch.backends.cudnn.version())"
  git log --oneline -1; git status --short | head -40; } > $OUT/c-env.txt 2>&1
python3 -m lltm_jit build > $OUT/c-build.txt 2>&1; python3 -m lltm_jit info >> $OUT/c-build.txt 2>&1
grep -E "built in" $OUT/c-build.txt | head -2
rm -rf /tmp/ve && mkdir /tmp/ve && git archive HEAD lltm_jit src | tar -x -C /tmp/ve && patch -s -d /tmp/ve -p1 < $S/bulk-everywhere.patch
timeout 200 python3 -m benchmarks.ab --base HEAD --base /tmp/ve --rounds 2 --sizes \
  32x8x1400:bfloat16,64x1024x1024:float16,1024x256x256:bfloat16,128x512x512:float16,64x256x512:bfloat16 > $OUT/c-ab.txt 2>&1
echo "ab rc=$?"; grep -E "fwd" $OUT/c-ab.txt | sort -k2,2 -k3,3 -k1,1 -s | awk '{print $1, $2, $3, $4}' | paste - - - - - -
timeout 100 python3 -m pytest -q -p no:cacheprovider -n 14 --timeout 90 tests/test_sequence.py \
  -k "tensor_core or cluster or persistent" > $OUT/c-tests.txt 2>&1
echo "tests rc=$?"; grep -E "FAILED|ERROR" $OUT/c-tests.txt | head -10 | cut -c1-250; tail -1 $OUT/c-tests.txt | cut -c1-300
pkill -f pytest || true
timeout 140 python3 bench.py --plan cudnn --budget 0.5 --out $OUT > $OUT/c-plan-cudnn.txt 2>&1
grep -E "^[0-9].*(fwd|bwd)|^  lltm_jit |^  lstm " $OUT/c-plan-cudnn.txt | paste - - - | sed -E 's/ +/ /g' | cut -c1-150
