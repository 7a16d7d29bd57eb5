#!/usr/bin/env bash
set -uo pipefail
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 LLTM_JIT_CACHE_DIR=/tmp/lltm-cache
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv
python3 -c "import lltm_jit; print(lltm_jit.build_info()['key'])" > $OUT/build.txt 2>&1 || { tail -30 $OUT/build.txt; exit 1; }
python3 -c "import torch; p=torch.cuda.get_device_properties(0); print(p.multi_processor_count, torch.cuda.get_device_capability())"
for size in 16x32x128 64x256x512; do timeout 90 python3 .gpu/prof7.py $size float32 2>&1 | grep -v -i warn; done | tee $OUT/prof7.txt
