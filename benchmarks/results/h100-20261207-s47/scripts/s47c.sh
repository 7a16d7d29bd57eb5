#!/usr/bin/env bash
# Session 47, call c (run by s47b.sh after wgmma_chunks): ss (wgmma-ss.patch, branch issue21-streamed-wgmma-ss over rs2s): the
# streamed product's wgmma's read h from the stages too (SS, the stages swizzled as W's tile, a
# proxy fence a thread a chunk, copies two chunks ahead), no ldmatrix or A registers. Checked with
# check_streamed, timed against main at 256x512x1024 bf16 and fp16, and tested where faster.
# Predicted: if wgmma_chunks.cu's SS variants run near wgmma's rate, the product ~3.5-5k cycles a
# step and the forward ~450-550 us against main's ~735; else rs2's ~860 again.
set -uo pipefail
export PYTHONUNBUFFERED=1
ROOT=$PWD; HERE=$ROOT/benchmarks/results/h100-20261207-s47/scripts; S42=$ROOT/benchmarks/results/h100-20261206-s42/scripts
rm -rf /tmp/ss && mkdir /tmp/ss && cp -r lltm_jit src tests benchmarks bench.py pyproject.toml /tmp/ss/
(cd /tmp/ss && patch -s -p1 < $HERE/wgmma-ss.patch) || exit 1
(cd /tmp/ss && PYTHONPATH=/tmp/ss LLTM_JIT_CACHE_DIR=/tmp/cache-ss timeout 200 python3 $S42/check_streamed.py > $OUT/c-check-ss.txt 2>&1)
checked=$?
echo "== check ss"; grep -v Warn $OUT/c-check-ss.txt | grep x | cut -c1-120
[ $checked = 0 ] || { echo "ss failed its check"; exit 1; }
PYTHONPATH=$ROOT timeout 200 python3 -m benchmarks.ab --base /tmp/ss --rounds 2 \
  --sizes 256x512x1024:bfloat16,256x512x1024:float16 > $OUT/c-ab.txt 2>&1
echo "ab rc=$? (base: ss, new: main)"; sed -n '/^size/,$p' $OUT/c-ab.txt
# ab's last column is new (main) over base (ss): above 1, ss is faster
if awk '$1 == "256x512x1024:bfloat16" && $2 == "fwd" {exit !($NF > 1.02)}' $OUT/c-ab.txt; then
  (cd /tmp/ss && PYTHONPATH=/tmp/ss LLTM_JIT_CACHE_DIR=/tmp/cache-ss timeout 200 python3 -m pytest tests/test_sequence.py tests/test_loader.py \
    -q -n 8 -p no:cacheprovider -k "streamed or long_sequence or peak_memory or arch") > $OUT/c-tests-ss.txt 2>&1
  echo "tests ss rc=$?"; grep -E "^(FAILED|ERROR)|passed|failed" $OUT/c-tests-ss.txt
fi
