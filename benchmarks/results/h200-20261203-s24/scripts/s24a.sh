#!/usr/bin/env bash
# session 24 call a: HEAD; vr = HEAD + relaxed-expect.patch (the clusters' arrival relaxed); the
# working tree (vr and the forward's gather through L2 on the bulk copy engine), timed in turn;
# the tests of the tensor-core kernels; bench's bfloat16 nn.LSTM flattened
set -uo pipefail
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 LLTM_JIT_CACHE_DIR=/tmp/lltm-cache
ROOT=$PWD; S=$ROOT/benchmarks/results/h200-20261203-s24/scripts
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
  python3 -c "import torch; print('torch', torch.__version__, 'CUDA', torch.version.cuda, 'cuDNN', torch.backends.cudnn.version())"
  git log --oneline -1; git status --short | head -40; } > $OUT/a-env.txt 2>&1
python3 -m lltm_jit build > $OUT/a-build.txt 2>&1; python3 -m lltm_jit info >> $OUT/a-build.txt 2>&1
grep -E "built in" $OUT/a-build.txt | head -2
rm -rf /tmp/vr && mkdir /tmp/vr && git archive HEAD lltm_jit src | tar -x -C /tmp/vr && patch -s -d /tmp/vr -p1 < $S/relaxed-expect.patch
timeout 230 python3 -m benchmarks.ab --base HEAD --base /tmp/vr --rounds 2 --sizes \
  64x1024x1024:float16,128x512x512:float16,8x256x512:float16,40x8x512:float16,600x8x256:bfloat16,32x8x1400:bfloat16,12x8x330:float16,64x256x512:float32 \
  > $OUT/a-ab.txt 2>&1
echo "ab rc=$?"; grep -E "fwd" $OUT/a-ab.txt | sort -k2,2 -k3,3 -k1,1 -s | awk '{print $1, $2, $3, $4}' | paste - - - - - -
timeout 60 python3 $S/flat_bf16.py > $OUT/a-flat.txt 2>&1; cat $OUT/a-flat.txt | tail -8
timeout 200 python3 -m pytest -q -p no:cacheprovider -n 14 --timeout 150 tests/test_sequence.py \
  -k "tensor_core or cluster or persistent" > $OUT/a-tests.txt 2>&1
echo "tests rc=$?"; grep -E "FAILED|ERROR" $OUT/a-tests.txt | head -10 | cut -c1-250; tail -2 $OUT/a-tests.txt | cut -c1-300
pkill -f pytest || true
