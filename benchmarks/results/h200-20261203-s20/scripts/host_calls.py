"""Session 20: bench.py's 16x32x128 fp32 sequence row (LLTMSequence, fwd+bwd, loss = output.sum(),
T = 64) called 200 times after a warm-up, for nsys's CUDA API summary: which runtime calls a call
makes and what they cost the host.

    nsys profile -t cuda -o /tmp/host python3 benchmarks/results/h200-20261203-s20/scripts/host_calls.py
"""
import torch

import lltm_jit

torch.manual_seed(0)
model = lltm_jit.LLTMSequence(32, 128).cuda()
x = torch.randn(64, 16, 32, device="cuda", requires_grad=True)
for _ in range(20):
    model(x)[0].sum().backward()
torch.cuda.synchronize()
torch.cuda.nvtx.range_push("calls")
for _ in range(200):
    model(x)[0].sum().backward()
torch.cuda.synchronize()
torch.cuda.nvtx.range_pop()
