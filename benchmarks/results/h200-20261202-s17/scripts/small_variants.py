"""16x32x128 fp32 T=64: where the module row's time goes beyond the op's (interleaved, bench's
sampling: the median of samples of 10 back-to-back calls)."""
import statistics, time, torch, lltm_jit
from lltm_jit import lltm_sequence
torch.manual_seed(0)
T, B, F, S = 64, 16, 32, 128
dev = "cuda"
m = lltm_jit.LLTMSequence(F, S, device=dev)
lstm = torch.nn.LSTM(F, S, device=dev); lstm.flatten_parameters()
x = torch.randn(T, B, F, device=dev)
xg = x.clone().requires_grad_()
w, b = m.weights_l0, m.bias_l0
V = {
  "op fwd (no_grad)": lambda: torch.no_grad()(lambda: lltm_sequence(x, w, b))(),
  "op grads w,b": lambda: torch.autograd.grad(lltm_sequence(x, w, b)[0].sum(), [w, b]),
  "op grads x,w,b": lambda: torch.autograd.grad(lltm_sequence(xg, w, b)[0].sum(), [xg, w, b]),
  "module grads x,w,b": lambda: torch.autograd.grad(m(xg)[0].sum(), [xg, *m.parameters()]),
  "module fwd only (grad mode)": lambda: m(xg),
  "lstm grads x,params": lambda: torch.autograd.grad(lstm(xg)[0].sum(), [xg, *lstm.parameters()]),
  "lstm fwd (no_grad)": lambda: torch.no_grad()(lambda: lstm(x))(),
}
res = {k: [] for k in V}
host = {k: [] for k in V}
for k, f in V.items():
    for _ in range(20): f()
torch.cuda.synchronize()
for _ in range(30):
    for k, f in V.items():
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        h0 = time.perf_counter()
        for _ in range(10): f()
        host[k].append((time.perf_counter() - h0) / 10 * 1e6)
        e.record(); e.synchronize()
        res[k].append(s.elapsed_time(e) / 10 * 1000)
for k, v in res.items():
    v.sort()
    print(f"{k:30} median {statistics.median(v):7.1f} us  p10 {v[3]:7.1f}  p90 {v[-4]:7.1f}  host {statistics.median(host[k]):7.1f} us")
