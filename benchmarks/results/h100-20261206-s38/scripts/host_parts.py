"""Session 38: the host's time in parts for the 16x32x128 fp32 T=64 module, with and without the
input's gradient (call c: 573 against 340 us a fwd+bwd): the forward with autograd recording, the
autograd.grad call alone after a synchronised forward, and torch.mm of d_input's shape. Each the
median over rounds of the host's time per call (calls returned; the device synchronised after
each round, outside the timed part).
  PYTHONPATH=. python3 host_parts.py"""
import time

import torch

import lltm_jit

T, B, F, S = 64, 16, 32, 128
dev = torch.device("cuda")
torch.manual_seed(0)
ours = lltm_jit.LLTMSequence(F, S, device=dev)
x_grad = torch.randn(T, B, F, device=dev, requires_grad=True)
x_fixed = x_grad.detach()
d_gates = torch.randn(T * B, 3 * S, device=dev)
w_x = torch.randn(3 * S, F, device=dev)


def median_host_us(fn, setup=None, calls=20, rounds=15):
    times = []
    for r in range(rounds + 3):
        total = 0.0
        for _ in range(calls):
            arg = setup() if setup else None
            torch.cuda.synchronize()
            start = time.perf_counter()
            fn(arg)
            total += time.perf_counter() - start
        torch.cuda.synchronize()
        if r >= 3:
            times.append(total / calls * 1e6)
    return sorted(times)[len(times) // 2]


for name, x in (("dx", x_grad), ("no dx", x_fixed)):
    leaves = ((x,) if x.requires_grad else ()) + tuple(ours.parameters())
    fwd = median_host_us(lambda _: ours(x)[0].sum())
    grad = median_host_us(lambda loss: torch.autograd.grad(loss, leaves), setup=lambda: ours(x)[0].sum())
    both = median_host_us(lambda _: torch.autograd.grad(ours(x)[0].sum(), leaves))
    print(f"{name:6s} forward+sum {fwd:7.1f} us   autograd.grad {grad:7.1f} us   both {both:7.1f} us", flush=True)
print(f"torch.mm d_input's shape {median_host_us(lambda _: torch.mm(d_gates, w_x)):7.1f} us")
print(f"torch.mm d_w_x's shape   {median_host_us(lambda _: torch.mm(d_gates.t(), x_fixed.view(T * B, F))):7.1f} us")
y = torch.randn(T, B, S, device=dev, requires_grad=True)
print(f"autograd.grad of (y*2).sum() {median_host_us(lambda l: torch.autograd.grad(l, (y,)), setup=lambda: (y * 2).sum()):7.1f} us")
