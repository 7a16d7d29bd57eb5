#!/usr/bin/env bash
# Session 44, call f: the forced streamed forward's fallback keeps a pair's tiling
# (use_persistent_forward, scripts/copies.patch in the working tree). The paired-tiling test on the
# tree without the patch (predicted: fails, 8 rows), then the tests of the kernels the forward
# chooses between, paired calls included, on the tree.
set -uo pipefail
export PYTHONUNBUFFERED=1
HERE=$PWD/benchmarks/results/h100-20261206-s44/scripts
bash benchmarks/device_env.sh > $OUT/f-env.txt 2>&1; head -2 $OUT/f-env.txt
rm -rf /tmp/before && mkdir /tmp/before && cp -r lltm_jit src tests benchmarks pyproject.toml /tmp/before/
(cd /tmp/before && patch -s -R -p1 < $HERE/copies.patch) || exit 1
(cd /tmp/before && PYTHONPATH=/tmp/before LLTM_JIT_CACHE_DIR=/tmp/cache-before timeout 90 python3 -m pytest -q -p no:cacheprovider \
  tests/test_lstm_parity.py -k directions_at_once_take_the_tiling_for_two) > $OUT/f-before.txt 2>&1
echo "before rc=$?"; grep -E "^(FAILED|ERROR|E  )|passed|failed" $OUT/f-before.txt | head -8
PYTHONPATH=. timeout 170 python3 -m pytest tests/test_sequence.py tests/test_lstm_parity.py -q -n 12 -p no:cacheprovider \
  -k "(streamed or which_persistent or fall_back or paired or at_once or bidirectional) and not cpu" > $OUT/f-tests.txt 2>&1
echo "tests rc=$?"; grep -E "^(FAILED|ERROR)|passed|failed" $OUT/f-tests.txt
