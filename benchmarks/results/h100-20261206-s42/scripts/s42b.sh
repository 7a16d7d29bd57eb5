#!/usr/bin/env bash
# Session 42, call b: where the streamed forward's step goes. Call a measured ~10 us a step at
# 256x512x1024 bf16 (734 us forward against the per-step path's 800), where ~4 us was predicted,
# and the same ~10 us at 128x1024x1024 with half the blocks: a per-multiprocessor limit, not L2's.
# - probe.patch: clock64 sums of a step's phases in three blocks, printed (one run each size);
# - deep.patch: the chunks through registers, 6 in flight a thread (48 KB a block, against two
#   8 KB stages of cp.async), into two stages: predicted ~0.6 of the forward's kernel time if the
#   copies' latency is what the step waits on;
# - pairs.patch: as deep, but each pair of warps that reads the same rows of h brings in its own
#   (32 rows x 32 columns a chunk) and waits at a named barrier of its two warps, not the block's;
#   pairs8.patch the same with 8 chunks in flight a thread (255 registers, no spills);
# - benchmarks.ab of the tree, deep, and LLTM_JIT_SEQUENCE_KERNEL=step / =streamed rows;
# - precision of the streamed path over T = 256 against the others (test_streamed_forward_long_sequence
#   failed call a for bf16 d_input).
set -uo pipefail
export PYTHONUNBUFFERED=1
ROOT=$PWD; HERE=$ROOT/benchmarks/results/h100-20261206-s42/scripts
bash benchmarks/device_env.sh > $OUT/b-env.txt 2>&1; head -3 $OUT/b-env.txt
for t in probe deep pairs pairs8; do rm -rf /tmp/$t; mkdir /tmp/$t; cp -r lltm_jit src tests benchmarks pyproject.toml /tmp/$t/
  (cd /tmp/$t && patch -s -p1 < $HERE/$t.patch) || exit 1; done
(cd /tmp/probe && PYTHONPATH=/tmp/probe LLTM_JIT_CACHE_DIR=/tmp/cache-probe timeout 120 python3 - <<'PY'
import torch, os
from lltm_jit import lltm_sequence
for b, f, s, env in ((256, 512, 1024, "auto"), (128, 512, 1024, "streamed")):
    os.environ["LLTM_JIT_SEQUENCE_KERNEL"] = env
    x = torch.randn(64, b, f, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(3 * s, s + f, device="cuda", dtype=torch.bfloat16) * (s + f) ** -0.5
    bias = torch.zeros(3 * s, device="cuda", dtype=torch.bfloat16)
    print(f"== {b}x{f}x{s}", flush=True)
    with torch.no_grad():
        for _ in range(2):
            lltm_sequence(x, w, bias)
            torch.cuda.synchronize()
PY
) > $OUT/b-probe.txt 2>&1; echo "probe rc=$?"; grep -E "==|probe block" $OUT/b-probe.txt | head -20
export PYTHONPATH=$ROOT
timeout 240 python3 -m benchmarks.ab --base . --base /tmp/deep --base /tmp/pairs --base /tmp/pairs8 --rounds 2 \
  --sizes 256x512x1024:bfloat16,256x512x1024:float16,128x1024x1024:bfloat16 \
  --env LLTM_JIT_SEQUENCE_KERNEL=step > $OUT/b-ab.txt 2>&1
echo "ab rc=$?"; sed -n '/^size/,$p' $OUT/b-ab.txt
timeout 150 python3 -m benchmarks.precision --device cuda --seeds 4 --sizes 130x16x200,70x9x72 > $OUT/b-precision.txt 2>&1
echo "precision rc=$?"; cat $OUT/b-precision.txt | head -80
