#!/usr/bin/env bash
# The next session's first call (session 26 had none), from main's checkout with this branch's
# changes uncommitted on it (`git diff main...issue21-shared-gather | git apply`; the device's copy
# holds one commit): the forward's gather through L2 shared by clusters of 4 (or 2) blocks of a
# group, multicast on the bulk copy engine, against HEAD (three rows of the tree: default, at most
# clusters of 2, and a build for sm_90 rather than sm_90a); the tensor-core kernels' tests; and
# whether the profiler's trace shows a kernel's cluster.
set -uo pipefail
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 LLTM_JIT_CACHE_DIR=/tmp/lltm-cache
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
  python3 -c "import torch; print('torch', torch.__version__, 'CUDA', torch.version.cuda, 'cuDNN', torch.backends.cudnn.version())"
  echo "TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-}"; git log --oneline -1; git status --short | head -40; } > $OUT/a-env.txt 2>&1
python3 -m lltm_jit build > $OUT/a-build.txt 2>&1; python3 -m lltm_jit info >> $OUT/a-build.txt 2>&1
grep -E "built in" $OUT/a-build.txt | head -2
timeout 200 python3 -m pytest -x -q -n 8 --timeout 150 tests/test_sequence.py \
  -k "shared_gather or which_persistent or clusters_sum or tensor_cores_long or tensor_cores_with_lengths or fall_back" \
  > $OUT/a-tests.txt 2>&1
echo "tests rc=$?"; tail -3 $OUT/a-tests.txt
python3 - > $OUT/a-trace.txt 2>&1 <<'PY'
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
tail -4 $OUT/a-trace.txt | cut -c1-400
timeout 330 python3 -m benchmarks.ab --base HEAD --rounds 2 \
  --env LLTM_JIT_CLUSTERS=2 --env TORCH_CUDA_ARCH_LIST=9.0 --sizes \
  64x1024x1024:float16,64x1024x1024:bfloat16,32x8x1400:bfloat16,64x768x768:bfloat16,128x512x512:float16 \
  > $OUT/a-ab.txt 2>&1
echo "ab rc=$?"; grep -E " fwd " $OUT/a-ab.txt | sort -k2,2 -k1,1 -s | awk '{print $1, $2, $3, $4, $5}'
