#!/usr/bin/env bash
# GPU job 2a: build, tests (both CUDA sequence paths), AMP tests, precision, sequence bench.
set -uo pipefail
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 LLTM_JIT_CACHE_DIR=/tmp/lltm-cache
{ date -u +%Y-%m-%dT%H:%M:%SZ; nvidia-smi -L
  python3 -c "import torch; print('torch', torch.__version__, 'CUDA', torch.version.cuda, 'cuDNN', torch.backends.cudnn.version())"; } > $OUT/env.txt 2>&1
cat $OUT/env.txt
python3 -c "import lltm_jit; print(lltm_jit.build_info())" > $OUT/build.txt 2>&1 || { tail -30 $OUT/build.txt; exit 1; }
tail -1 $OUT/build.txt
s=$SECONDS; timeout 250 python3 -m pytest tests -q -rs -m "not slow" -p no:cacheprovider > $OUT/tests.txt 2>&1; echo "tests rc=$? $((SECONDS-s)) s: $(tail -1 $OUT/tests.txt)"
s=$SECONDS; timeout 90 python3 -m pytest tests/test_amp.py -q -rs -p no:cacheprovider > $OUT/tests-amp.txt 2>&1; echo "amp tests (slow incl.) rc=$? $((SECONDS-s)) s: $(tail -1 $OUT/tests-amp.txt)"
s=$SECONDS; LLTM_JIT_SEQUENCE_KERNEL=step timeout 90 python3 -m pytest tests/test_sequence.py tests/test_lstm_parity.py tests/test_amp.py -q -p no:cacheprovider -k "cuda and not compile" > $OUT/tests-step.txt 2>&1; echo "step-path tests rc=$? $((SECONDS-s)) s: $(tail -1 $OUT/tests-step.txt)"
s=$SECONDS; timeout 60 python3 -m benchmarks.precision --device cuda --seeds 4 > $OUT/precision.txt 2>&1; echo "precision rc=$? $((SECONDS-s)) s"
s=$SECONDS; timeout 130 python3 bench.py --kind sequence --no-save > $OUT/bench-sequence.txt 2>$OUT/bench-sequence.err; echo "bench rc=$? $((SECONDS-s)) s"
grep -E "^FAILED|^ERROR" $OUT/tests.txt $OUT/tests-amp.txt $OUT/tests-step.txt | head -20
cat $OUT/precision.txt
grep -E "floor|lltm_jit  |lstm  |loop  " $OUT/bench-sequence.txt
