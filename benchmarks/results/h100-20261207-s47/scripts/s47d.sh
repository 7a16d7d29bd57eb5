#!/usr/bin/env bash
# Session 47, call d: hp (host-products.patch, branch issue21-host-products-2: session 27's unrun
# branch ported to main), the sequence backward's d_input and d_weights through cuBLAS called
# directly instead of ATen's mm. Its CUDA sequence tests, then benchmarks.ab against main with the
# input's gradient (bench.py's rows take it). Predicted: 16x32x128 fp32 fwd+bwd 40-80 us less of
# ~550-650 (host-bound); 256x512x1024 bf16 (device-bound) unchanged.
set -uo pipefail
export PYTHONUNBUFFERED=1
ROOT=$PWD; HERE=$ROOT/benchmarks/results/h100-20261207-s47/scripts
rm -rf /tmp/hp && mkdir /tmp/hp && cp -r lltm_jit src tests benchmarks bench.py pyproject.toml /tmp/hp/
(cd /tmp/hp && patch -s -p1 < $HERE/host-products.patch) || exit 1
(cd /tmp/hp && PYTHONPATH=/tmp/hp LLTM_JIT_CACHE_DIR=/tmp/cache-hp timeout 150 python3 -m pytest -q -n 14 -p no:cacheprovider \
  -k "not cpu" tests/test_sequence.py tests/test_module.py) > $OUT/d-tests-hp.txt 2>&1
echo "tests hp rc=$?"; grep -E "^(FAILED|ERROR)|passed|failed" $OUT/d-tests-hp.txt | tail -n 12
PYTHONPATH=$ROOT timeout 200 python3 -m benchmarks.ab --base /tmp/hp --rounds 3 \
  --sizes 16x32x128:float32:dx,256x512x1024:bfloat16:dx > $OUT/d-ab.txt 2>&1
echo "ab rc=$? (base: hp, new: main)"; sed -n '/^size/,$p' $OUT/d-ab.txt
