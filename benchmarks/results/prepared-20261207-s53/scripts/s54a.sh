#!/usr/bin/env bash
# Prepared in session 53 (not run): the step path on main as it stands after 8758d94, whose
# choice of TF32's parts past batch 256 did not run on a GPU, and the two small bf16 rows that
# session 53's second H100 timed too noisily (20-40% between rounds) to tell against main before
# the halving rule. Base: cdcb1ec's lltm_jit and src in base-s54/, made before the call (the
# device's copy has no git history): `mkdir base-s54 && git archive cdcb1ec lltm_jit src | tar -x
# -C base-s54`. ~4 min on any GPU.
# Predicted: the tests pass; 384x256x512 and 512x256x512 bf16 fwd+bwd 0.97-1.00 of cdcb1ec (2
# parts, where session 53's call b read 0.967 at 512 on a quiet machine); TF32 512x256x512 1.00
# (unchanged code path).
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
bash benchmarks/device_env.sh > $OUT/a-env.txt 2>&1; head -2 $OUT/a-env.txt
[ -d base-s54/src ] || { echo 'base-s54/ is missing'; exit 1; }
timeout 120 python3 -m pytest -q -p no:cacheprovider -k "step_path or parts or fallback" tests/test_sequence.py > $OUT/a-tests.txt 2>&1
echo "tests rc=$? at ${SECONDS}s"; tail -n 5 $OUT/a-tests.txt | grep -E "FAILED|ERROR|passed|failed"
timeout 300 python3 -m benchmarks.ab --base base-s54 --rounds 9 \
  --sizes 384x256x512:bfloat16:dx,512x256x512:bfloat16:dx,512x256x512:tf32:dx > $OUT/a-ab.txt 2>&1
echo "ab rc=$? at ${SECONDS}s"
sed -n '/^size/,$p' $OUT/a-ab.txt
