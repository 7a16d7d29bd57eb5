#!/usr/bin/env bash
# Session 8, call 1: validate df82b46 on the GPU (CUDA tests), trace back-to-back small calls,
# Nsight Compute stall reasons of the persistent kernels.
set -uo pipefail
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 LLTM_JIT_CACHE_DIR=/tmp/lltm-8
{ date -u +%Y-%m-%dT%H:%M:%SZ; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; uname -r
  python3 -c "import torch; print('torch', torch.__version__, 'CUDA', torch.version.cuda, 'cuDNN', torch.backends.cudnn.version())"; } > $OUT/env.txt 2>&1
s=$SECONDS; python3 -c "import lltm_jit; print(lltm_jit.build_info()['key'])" > $OUT/build.txt 2>&1 || { tail -30 $OUT/build.txt; exit 1; }
echo "build $((SECONDS-s)) s"
s=$SECONDS; timeout 200 python3 -m pytest tests -m "not slow" -q -p no:cacheprovider -x > $OUT/tests.txt 2>&1; echo "tests rc=$? $((SECONDS-s)) s: $(tail -1 $OUT/tests.txt)"
grep -E "^FAILED|^ERROR" $OUT/tests.txt | head -5
s=$SECONDS; timeout 120 python3 .gpu/trace8.py > $OUT/trace.txt 2>&1; echo "trace rc=$? $((SECONDS-s)) s"; grep round $OUT/trace.txt
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
s=$SECONDS; timeout 150 $NCU --clock-control none -k regex:persistent --launch-count 6 --set full --import-source no -o $OUT/persistent -f python3 .gpu/ncu8.py > $OUT/ncu-run.txt 2>&1; echo "ncu rc=$? $((SECONDS-s)) s"; tail -3 $OUT/ncu-run.txt
$NCU -i $OUT/persistent.ncu-rep --page details > $OUT/ncu-details.txt 2>&1
$NCU -i $OUT/persistent.ncu-rep --page raw --csv > $OUT/ncu-raw.csv 2>&1
$NCU -i $OUT/persistent.ncu-rep --page source --csv --print-source sass > $OUT/ncu-source.csv 2>&1; echo "source rc=$? $(wc -c < $OUT/ncu-source.csv) bytes"
grep -E "persistent_|Duration|Warp Cycles Per Issued|Stall|Issued Warp|Achieved Occupancy" $OUT/ncu-details.txt | head -60
