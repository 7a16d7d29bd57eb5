"""Session 18: the persistent kernels' device time and launch shape (grid, block, shared memory)
from a profiler trace, with the groups in clusters of at most 16 or 8 blocks and not
(CLUSTER_SETTINGS), fwd+bwd at T = 64.

    PYTHONPATH=.:tests python3 benchmarks/results/h200-20261203-s18/scripts/kernels.py
"""
import json
import os
import sys
import tempfile

import torch

from lltm_jit import lltm_sequence
from test_sequence import make_sequence

SIZES = [(8, 256, 512, torch.float16), (16, 32, 128, torch.bfloat16), (64, 256, 512, torch.bfloat16),
         (128, 512, 512, torch.float16), (1024, 256, 256, torch.bfloat16), (256, 256, 512, torch.bfloat16),
         (40, 8, 512, torch.bfloat16), (12, 8, 330, torch.bfloat16)]
if len(sys.argv) > 1:
    SIZES = [(*map(int, s.split(":")[0].split("x")), getattr(torch, s.split(":")[1])) for s in sys.argv[1:]]

for B, F, S, dtype in SIZES:
    args = [a.detach().to(dtype).requires_grad_() for a in make_sequence(64, B, F, S, device="cuda", seed=3)]
    for clusters in os.environ.get("CLUSTER_SETTINGS", "16 8 0").split():
        os.environ["LLTM_JIT_CLUSTERS"] = clusters  # the largest cluster; 0: none

        def call():
            out, _ = lltm_sequence(args[0], args[1], args[2], (args[3], args[4]))
            torch.autograd.grad(out.sum(), args[:3])

        for _ in range(3):
            call()
        torch.cuda.synchronize()
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            for _ in range(5):
                call()
            torch.cuda.synchronize()
        with tempfile.NamedTemporaryFile(suffix=".json") as f:
            prof.export_chrome_trace(f.name)
            events = json.load(open(f.name))["traceEvents"]
        found = {}
        for e in events:
            name = e.get("name", "")
            if e.get("cat") == "kernel" and ("tensor_core_" in name or "persistent_" in name or "step_" in name):
                key = name.split("(")[0].replace("void lltm::cuda::", "")
                a = e.get("args", {})
                found.setdefault(key, []).append((e["dur"], a.get("grid"), a.get("shared memory"), a.get("registers per thread")))
        for key, runs in sorted(found.items()):
            durs = sorted(r[0] for r in runs)
            print(f"{B}x{F}x{S} {str(dtype)[6:]:9} clusters={clusters} {key:62} n={len(runs):3} "
                  f"median {durs[len(durs) // 2]:8.1f} us  grid {runs[0][1]} smem {runs[0][2]} regs {runs[0][3]}", flush=True)
