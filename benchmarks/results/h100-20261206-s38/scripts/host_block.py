"""Session 38: why the 16x32x128 fp32 module's fwd+bwd takes 573 us a call back to back with the
input's gradient and 340 without (call c), when the host's parts add up to 291 and 262 (call d):
per call of a back-to-back run, the host's time in the forward (with the loss) and in
autograd.grad, medians and the slowest; then one call under torch.cuda.set_sync_debug_mode.
  PYTHONPATH=. python3 host_block.py"""
import time
import warnings

import torch

import lltm_jit

T, B, F, S = 64, 16, 32, 128
dev = torch.device("cuda")
torch.manual_seed(0)
ours = lltm_jit.LLTMSequence(F, S, device=dev)
x_grad = torch.randn(T, B, F, device=dev, requires_grad=True)
cases = {"dx": (x_grad, (x_grad, *ours.parameters())), "no dx": (x_grad.detach(), tuple(ours.parameters())),
         "dx only": (x_grad, (x_grad,))}
for name, (x, leaves) in cases.items():
    fwd, grad, whole = [], [], []
    for round_ in range(12):
        torch.cuda.synchronize()
        begin = time.perf_counter()
        for _ in range(20):
            a = time.perf_counter()
            loss = ours(x)[0].sum()
            b = time.perf_counter()
            torch.autograd.grad(loss, leaves)
            c = time.perf_counter()
            if round_ >= 2:
                fwd.append((b - a) * 1e6)
                grad.append((c - b) * 1e6)
        torch.cuda.synchronize()
        if round_ >= 2:
            whole.append((time.perf_counter() - begin) / 20 * 1e6)
    med = lambda v: sorted(v)[len(v) // 2]
    print(f"{name:8s} wall {med(whole):7.1f} us a call; host forward median {med(fwd):7.1f} max {max(fwd):7.1f};"
          f" autograd.grad median {med(grad):7.1f} max {max(grad):7.1f}", flush=True)

torch.cuda.set_sync_debug_mode("warn")
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    for _ in range(2):
        torch.autograd.grad(ours(x_grad)[0].sum(), (x_grad, *ours.parameters()))
    torch.cuda.synchronize()
torch.cuda.set_sync_debug_mode(0)
print(f"sync debug mode: {len(caught)} warnings")
for w in caught[:10]:
    print("  ", str(w.message)[:300])
