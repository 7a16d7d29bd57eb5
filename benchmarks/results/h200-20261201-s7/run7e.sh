#!/usr/bin/env bash
# Final check of the split persistent kernels: cold build, the whole non-slow suite, precision,
# persistent vs step path at split sizes, the sequence bench twice.
set -uo pipefail
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 LLTM_JIT_CACHE_DIR=/tmp/lltm-final
{ date -u +%Y-%m-%dT%H:%M:%SZ; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
  python3 -c "import torch; print('torch', torch.__version__, 'CUDA', torch.version.cuda, 'cuDNN', torch.backends.cudnn.version())"
  nvcc --version | tail -1; git log -1 --format=%H 2>/dev/null; } > $OUT/env.txt 2>&1
s=$SECONDS; python3 -c "import lltm_jit; print(lltm_jit.build_info()['key'])" > $OUT/build.txt 2>&1 || { tail -30 $OUT/build.txt; exit 1; }
echo "cold import $((SECONDS-s)) s: $(tail -1 $OUT/build.txt)"
s=$SECONDS; timeout 250 python3 -m pytest tests -q -rs -m "not slow" -p no:cacheprovider > $OUT/tests.txt 2>&1; echo "tests rc=$? $((SECONDS-s)) s: $(tail -1 $OUT/tests.txt)"
grep -E "^FAILED|^ERROR" $OUT/tests.txt | head -8
s=$SECONDS; timeout 60 python3 -m benchmarks.precision --device cuda --seeds 4 > $OUT/precision.txt 2>&1; echo "precision rc=$? $((SECONDS-s)) s"
s=$SECONDS; timeout 90 python3 .gpu/paths7.py > $OUT/paths.txt 2>&1; echo "paths rc=$? $((SECONDS-s)) s"; cat $OUT/paths.txt
for i in 1 2; do
  s=$SECONDS; timeout 130 python3 bench.py --kind sequence --no-save > $OUT/bench-sequence-$i.txt 2>/dev/null; echo "bench $i rc=$? $((SECONDS-s)) s"
  grep -E "fwd\+bwd: floor|lltm_jit |lstm " $OUT/bench-sequence-$i.txt | grep -v backend | paste - - - | awk '{print $1, $3, $6, $7, $12, $13, $14}'
done
