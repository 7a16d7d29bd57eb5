"""Host cost per call on the GPU machine (back-to-back calls, no sync between them): the pieces of a
small sequence fwd+bwd, to predict what removing each would save."""
import os, statistics, tarfile, time
import torch
import lltm_jit
from lltm_jit import ops
from torch.profiler import ProfilerActivity, profile

torch.backends.cuda.matmul.allow_tf32 = False
T, B, F, S = 64, 16, 32, 128
dev = "cuda"
m = lltm_jit.LLTMSequence(F, S, device=dev)
x = torch.randn(T, B, F, device=dev, requires_grad=True)
w, b = m.weights_l0, m.bias_l0
z = torch.zeros(B, S, device=dev)
op = ops._sequence_forward
lstm = torch.nn.LSTM(F, S, device=dev)
a2 = torch.randn(1024, 384, device=dev); b2 = torch.randn(384, 32, device=dev)
g = torch.randn(1024, 384, device=dev); ones = torch.ones(1024, device=dev)
out = m(x)[0]
cases = {
    "module fwd+bwd": lambda: torch.autograd.grad(m(x)[0].sum(), (x, w, b)),
    "functional fwd+bwd": lambda: torch.autograd.grad(lltm_jit.lltm_sequence(x, w, b)[0].sum(), (x, w, b)),
    "op fwd+bwd": lambda: torch.autograd.grad(op(x, w, b, z, z, None, None)[0].sum(), (x, w, b)),
    "lstm fwd+bwd": lambda: torch.autograd.grad(lstm(x)[0].sum(), (x, *lstm.parameters())),
    "module fwd": lambda: m(x),
    "functional fwd": lambda: lltm_jit.lltm_sequence(x, w, b),
    "op fwd": lambda: op(x, w, b, z, z, None, None),
    "op fwd no_grad": lambda: op(x.detach(), w.detach(), b.detach(), z, z, None, False),
    "lstm fwd": lambda: lstm(x),
    "empty": lambda: torch.empty(4096, device=dev),
    "zeros": lambda: torch.zeros(4096, device=dev),
    "ones_like scalar": lambda: torch.ones((), device=dev),
    "mm 1024x384x32": lambda: torch.mm(a2, b2),
    "mv 384x1024": lambda: torch.mv(g.t(), ones),
    "sum dim0 1024x384": lambda: g.sum(0),
    "sum all (loss)": lambda: out.sum(),
    "view out[None] (grad)": lambda: out[None],
    "noop kernel (add_ 1 elem)": lambda: ones[:1].add_(0),
}
names = list(cases)
for fn in cases.values():
    for _ in range(10): fn()
torch.cuda.synchronize()
host = {n: [] for n in names}
for rnd in range(15):
    for n in names:
        fn = cases[n]
        reps = 10 if "fwd" in n else 100
        torch.cuda.synchronize()
        a = time.perf_counter()
        for _ in range(reps): fn()
        host[n].append((time.perf_counter() - a) / reps * 1e6)
        torch.cuda.synchronize()
for n in names:
    v = sorted(host[n])
    print(f"{n:28s} host {statistics.median(v):7.1f} us/call (p10 {v[1]:.1f}, p90 {v[-2]:.1f})")
outdir = os.environ.get("OUT", "/tmp")
files = []
for n in ("module fwd+bwd", "lstm fwd+bwd"):
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(5): cases[n]()
        torch.cuda.synchronize()
    path = f"/tmp/trace-{n.split()[0]}.json"
    prof.export_chrome_trace(path); files.append(path)
with tarfile.open(f"{outdir}/traces.tar.gz", "w:gz") as tar:
    for f in files: tar.add(f, arcname=os.path.basename(f))
