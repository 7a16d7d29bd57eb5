#!/usr/bin/env bash
# session 23 call e: the clusters' mbarrier arrival and wait at the CTA scope's default semantics
# (the working tree) against v3 = HEAD + v3.patch (this session's commits up to 5f91985, whose
# wait acquired at the cluster's scope): the cluster tests, then timed in turn, then issue 21's rows
set -uo pipefail
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 LLTM_JIT_CACHE_DIR=/tmp/lltm-cache
ROOT=$PWD; S=$ROOT/benchmarks/results/h200-20261203-s23/scripts
{ date -u; python3 -c "import torch; print('torch', torch.__version__, 'CUDA', torch.version.cuda)"
  git log --oneline -1; git status --short | head -40; } > $OUT/e-env.txt 2>&1
python3 -m lltm_jit build > $OUT/e-build.txt 2>&1; grep -E "built in" $OUT/e-build.txt | head -1
timeout 100 python3 -m pytest -q -p no:cacheprovider -n 14 --timeout 90 tests/test_sequence.py \
  -k "cluster or tensor_cores or which_persistent or low_precision or alignment or fall_back" > $OUT/e-tests.txt 2>&1
echo "tests rc=$?"; grep -E "FAILED|ERROR" $OUT/e-tests.txt | head -10 | cut -c1-250; tail -1 $OUT/e-tests.txt | cut -c1-300
pkill -f pytest || true
rm -rf /tmp/v3 && mkdir /tmp/v3 && git archive HEAD lltm_jit src | tar -x -C /tmp/v3 && (patch -s -d /tmp/v3 -p1 < $S/v3.patch || (cd /tmp/v3 && git apply -p1 $S/v3.patch))
timeout 150 python3 -m benchmarks.ab --base /tmp/v3 --rounds 2 --sizes \
  8x256x512:float16,600x8x256:bfloat16,12x8x330:float16,128x512x512:float16 > $OUT/e-ab.txt 2>&1
grep -E "fwd" $OUT/e-ab.txt | sort -k2,2 -k3,3 -k1,1 -s | awk '{print $1, $2, $3, $4}' | paste - - - -
timeout 80 python3 bench.py --plan cudnn --budget 0.5 --out $OUT > $OUT/e-plan-cudnn.txt 2>&1
grep -E "^[0-9].*(fwd|bwd)|^  lltm_jit " $OUT/e-plan-cudnn.txt | paste - - | cut -c1-150
