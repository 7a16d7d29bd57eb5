#!/usr/bin/env bash
# A later session's first call (sessions 26 and 27 had no device), from main's checkout with the
# three unrun branches' diffs applied together (`for b in issue21-shared-gather issue21-step-chains
# issue21-host-products; do git diff main...$b | git apply; done`; the device's copy holds one
# commit, so --base HEAD is main). The changes touch apart paths, so one A/B against main tells
# them apart by size: the shared gather the tensor-core forward where a group exchanges through L2
# (64x1024x1024 fp16, 32x8x1400 and 64x768x768 bf16), the chains the per-step path where
# LLTM_JIT_STEP_CHAINS is set (rows for 2 and 4; one chain by default), the host products the
# backward's host time (16x32x128 fp32 with the input's gradient, :dx). Before it: the tests of
# the three (the sequence tests on CUDA, again on the per-step path), the trace's cluster, and the
# chains model. s26a.sh, s26b.sh and s27a.sh run each branch alone, where one must be told apart.
set -uo pipefail
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 LLTM_JIT_CACHE_DIR=/tmp/lltm-cache
bash benchmarks/device_env.sh > $OUT/b-env.txt 2>&1
python3 -m lltm_jit build > $OUT/b-build.txt 2>&1; python3 -m lltm_jit info >> $OUT/b-build.txt 2>&1
grep -E "built in" $OUT/b-build.txt | head -2
timeout 200 python3 -m pytest -q -rfE -p no:cacheprovider -n 15 --timeout 150 tests/test_sequence.py \
  -k "(cuda and not cpu) or step_path or shared_gather or persistent or clusters or tensor_cores" > $OUT/b-tests.txt 2>&1
echo "tests rc=$?"; tail -2 $OUT/b-tests.txt
LLTM_JIT_SEQUENCE_KERNEL=step timeout 100 python3 -m pytest -q -rfE -p no:cacheprovider -n 15 --timeout 80 \
  tests/test_sequence.py -k "cuda and not cpu" > $OUT/b-tests-step.txt 2>&1
echo "tests (per-step path) rc=$?"; tail -2 $OUT/b-tests-step.txt
python3 - > $OUT/b-trace.txt 2>&1 <<'PY'
import json, os, tempfile, torch, lltm_jit
from lltm_jit import lltm_sequence
x = torch.randn(8, 64, 8, device="cuda", dtype=torch.float16)
w = torch.randn(3072, 1032, device="cuda", dtype=torch.float16) * 0.03
b = torch.randn(3072, device="cuda", dtype=torch.float16)
with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
    lltm_sequence(x, w, b); torch.cuda.synchronize()
path = os.path.join(tempfile.mkdtemp(), "t.json"); prof.export_chrome_trace(path)
for e in json.load(open(path))["traceEvents"]:
    if "tensor_core" in e.get("name", ""):
        print(e["name"][:80], e.get("args"))
PY
tail -2 $OUT/b-trace.txt | cut -c1-400
timeout 90 python3 -m benchmarks.chains --ours > $OUT/b-chains.txt 2>&1
echo "chains model rc=$?"; tail -12 $OUT/b-chains.txt
timeout 240 python3 -m benchmarks.ab --base HEAD --rounds 2 --env LLTM_JIT_STEP_CHAINS=2 --env LLTM_JIT_STEP_CHAINS=4 \
  --sizes 64x1024x1024:float16,32x8x1400:bfloat16,64x768x768:bfloat16,256x512x1024:tf32,256x512x1024:bfloat16,256x512x1024:float32,16x32x128:float32:dx \
  > $OUT/b-ab.txt 2>&1
echo "ab rc=$?"; grep -E "fwd" $OUT/b-ab.txt | sort -k2,2 -k3,3 -k1,1 -s | awk '{print $1, $2, $3, $4, $5, $6}'
