#!/usr/bin/env bash
# session 23 call b: HEAD; v1 = HEAD + v1.patch (the forward's projection loaded after the step's
# arrival, W_h's prologue in 16-byte loads); the working tree (v1 and the cluster forward's
# exchange through st.async and mbarriers), timed in turn; the stall samples again; issue 21's
# rows; the sequence tests
set -uo pipefail
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 LLTM_JIT_CACHE_DIR=/tmp/lltm-cache
ROOT=$PWD; S=$ROOT/benchmarks/results/h200-20261203-s23/scripts
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
  python3 -c "import torch; print('torch', torch.__version__, 'CUDA', torch.version.cuda, 'cuDNN', torch.backends.cudnn.version())"
  git log --oneline -1; git status --short | head -40; } > $OUT/b-env.txt 2>&1
rm -rf /tmp/li /tmp/li-cache && mkdir /tmp/li && cp -r lltm_jit src /tmp/li/
sed -i 's/^NVCC_FLAGS = ("-O3",/NVCC_FLAGS = ("-O3", "-lineinfo",/' /tmp/li/lltm_jit/jit/spec.py
(python3 -m lltm_jit build > $OUT/b-build.txt 2>&1; python3 -m lltm_jit info >> $OUT/b-build.txt 2>&1) &
(cd /tmp/li && PYTHONPATH=/tmp/li LLTM_JIT_CACHE_DIR=/tmp/li-cache python3 -m lltm_jit build > /tmp/li-build.txt 2>&1) &
wait
grep -E "built in" $OUT/b-build.txt | head -2; tail -1 /tmp/li-build.txt
rm -rf /tmp/v1 && mkdir /tmp/v1 && git archive HEAD lltm_jit src | tar -x -C /tmp/v1 && (patch -s -d /tmp/v1 -p1 < $S/v1.patch || (cd /tmp/v1 && git apply -p1 $S/v1.patch))
timeout 300 python3 -m benchmarks.ab --base HEAD --base /tmp/v1 --rounds 2 --sizes \
  8x256x512:float16,64x1024x1024:float16,128x512x512:float16,64x512x512:bfloat16,1024x256x256:bfloat16,64x256x512:float32 \
  > $OUT/b-ab.txt 2>&1
cat $OUT/b-ab.txt | grep -v "^base\|^new:" | head -60
mkdir -p /tmp/cubins && cd /tmp/cubins
for o in $(find /tmp/li-cache -name "tensor_core_forward_f16*.o"); do cuobjdump -xelf all $o > /dev/null 2>&1; done
for c in *.cubin; do nvdisasm -g -c $c; done > /tmp/disasm.txt 2>&1
cd $ROOT
K="--kernel-name regex:tensor_core_forward_kernel --launch-skip 2 --launch-count 1"
for spec in "8 256 512 float16 256 small" "64 1024 1024 float16 64 large"; do
  set -- $spec
  (cd /tmp/li && PYTHONPATH=/tmp/li LLTM_JIT_CACHE_DIR=/tmp/li-cache timeout 150 ncu $K --section SourceCounters \
    --page source --print-source sass --csv python3 $S/one_forward.py $1 $2 $3 $4 $5 > /tmp/ncu-$6.csv 2>&1)
  python3 $S/sass_lines.py /tmp/ncu-$6.csv /tmp/disasm.txt 40 > /tmp/lines-$6.txt 2>&1
  head -14 /tmp/lines-$6.txt
done
tar czf $OUT/b-ncu.tar.gz -C /tmp ncu-small.csv ncu-large.csv lines-small.txt lines-large.txt disasm.txt
timeout 120 python3 bench.py --plan cudnn --budget 0.5 --out $OUT > $OUT/b-plan-cudnn.txt 2>&1
grep -E "^[0-9].*(fwd|bwd)|^  lltm_jit " $OUT/b-plan-cudnn.txt | paste - - | cut -c1-150
timeout 170 python3 -m pytest -q -p no:cacheprovider -n 14 --timeout 150 tests/test_sequence.py -k 'not cpu' > $OUT/b-tests.txt 2>&1
echo "tests rc=$?"; tail -4 $OUT/b-tests.txt | cut -c1-300
pkill -f pytest || true
