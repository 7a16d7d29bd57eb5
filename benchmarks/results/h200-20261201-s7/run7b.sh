#!/usr/bin/env bash
# Split persistent kernels: tests, profile, sequence bench.
set -uo pipefail
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 LLTM_JIT_CACHE_DIR=/tmp/lltm-cache
python3 -c "import lltm_jit; print(lltm_jit.build_info()['key'])" > $OUT/build.txt 2>&1 || { tail -30 $OUT/build.txt; exit 1; }
tail -1 $OUT/build.txt
s=$SECONDS; timeout 200 python3 -m pytest tests/test_sequence.py tests/test_lstm_parity.py -q -x -p no:cacheprovider -k "cuda and not inductor" > $OUT/tests.txt 2>&1; echo "tests rc=$? $((SECONDS-s)) s: $(tail -1 $OUT/tests.txt)"
grep -E "^FAILED|Error|error" $OUT/tests.txt | head -8
for a in "16x32x128 float32" "64x256x512 float32" "64x256x512 bfloat16"; do timeout 60 python3 .gpu/prof7.py $a 2>&1 | grep -v -i warn | grep -v "host, self" | head -5; done | tee $OUT/prof.txt
s=$SECONDS; timeout 150 python3 bench.py --kind sequence --backends lltm_jit,lstm --no-save --repeats 40 > $OUT/bench-sequence.txt 2>&1; echo "bench rc=$? $((SECONDS-s)) s"
grep -E "floor|lltm_jit |lstm " $OUT/bench-sequence.txt | grep -v backend
