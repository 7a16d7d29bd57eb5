"""Session 18: the cluster kernels against the reference and the kernels without clusters, before the tests.

    PYTHONPATH=.:tests python3 benchmarks/results/h200-20261203-s18/scripts/smoke.py
"""
import os

import torch

from lltm_jit import lltm_sequence, reference_lltm_sequence
from test_sequence import make_sequence, rel_err, run

for size in [(8, 256, 512), (12, 8, 330), (600, 8, 256), (16, 32, 128), (128, 512, 512)]:
    args64 = make_sequence(16, *size, device="cuda", seed=1)
    for dtype in (torch.float16, torch.bfloat16):
        args = [a.detach().to(dtype).requires_grad_() for a in args64]
        res = {}
        for clusters in ("16", "0"):
            os.environ["LLTM_JIT_CLUSTERS"] = clusters
            res[clusters] = run(lltm_sequence, args)
        exact = run(reference_lltm_sequence, [a.detach().double().requires_grad_() for a in args])
        eager = run(reference_lltm_sequence, args)
        errors = " ".join(f"{rel_err(a, x):.1e}/{rel_err(b, x):.1e}/{rel_err(e, x):.1e}"
                          for a, b, e, x in zip(res["16"], res["0"], eager, exact))
        same = all(torch.equal(a, b) for a, b in zip(res["16"], res["0"]))
        print(size, dtype, "errors clusters/none/eager:", errors, "bitwise equal:", same, flush=True)
