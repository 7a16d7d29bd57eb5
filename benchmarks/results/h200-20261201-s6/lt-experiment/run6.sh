#!/usr/bin/env bash
# GPU job 6: cuBLASLt plans for the per-step products: tests, profile, sequence bench.
set -uo pipefail
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 LLTM_JIT_CACHE_DIR=/tmp/lltm-cache
python3 -c "import lltm_jit; print(lltm_jit.build_info()['key'])" > $OUT/build.txt 2>&1 || { tail -30 $OUT/build.txt; exit 1; }
tail -2 $OUT/build.txt
s=$SECONDS; LLTM_JIT_SEQUENCE_KERNEL=step timeout 100 python3 -m pytest tests/test_sequence.py tests/test_lstm_parity.py tests/test_amp.py -q -x -p no:cacheprovider -k "cuda and not inductor" > $OUT/tests-step.txt 2>&1; echo "step-path tests rc=$? $((SECONDS-s)) s: $(tail -1 $OUT/tests-step.txt)"
s=$SECONDS; timeout 60 python3 -m pytest tests/test_sequence.py -q -x -p no:cacheprovider -k "cuda" > $OUT/tests-seq.txt 2>&1; echo "sequence tests rc=$? $((SECONDS-s)) s: $(tail -1 $OUT/tests-seq.txt)"
grep -E "^FAILED|Error" $OUT/tests-step.txt $OUT/tests-seq.txt | head -8
timeout 60 python3 .gpu/prof.py float32 new 2>&1 | grep -v -i warn | head -4
timeout 60 python3 .gpu/prof.py bfloat16 new 2>&1 | grep -v -i warn | head -4
s=$SECONDS; timeout 120 python3 bench.py --kind sequence --backends lltm_jit,lstm,loop --no-save --repeats 60 > $OUT/bench-sequence.txt 2>/dev/null; echo "bench rc=$? $((SECONDS-s)) s"
grep -E "floor|lltm_jit |lstm " $OUT/bench-sequence.txt | grep -v backend
