"""The step op's forward + backward on the CPU against eager (the reference) and against the op
on ATen's products (LLTM_JIT_CPU_RECURRENCE=aten), 2 threads, interleaved in one process; prints
the best and the median per call (issue 24).

    python benchmarks/cpu_step_paths.py BxFxS ROUNDS
"""
import os, sys, time, statistics, torch, lltm_jit
from lltm_jit import reference_lltm
torch.set_num_threads(2)
B,F,S = map(int, sys.argv[1].split("x")); n = int(sys.argv[2])
torch.manual_seed(0)
x = torch.randn(B,F, requires_grad=True); w = (torch.randn(3*S, S+F)/13).requires_grad_(); b = torch.randn(3*S, requires_grad=True)
h = torch.randn(B,S, requires_grad=True); c = torch.randn(B,S, requires_grad=True)
args = (x,w,b,h,c)
def fb(fn):
    nh, nc = fn(*args); torch.autograd.grad((nh, nc), args, (gh, gc))
gh, gc = torch.randn(B,S), torch.randn(B,S)
res = {}
for r in range(n):
    for cfg in ("default", "aten", "eager"):
        if cfg == "aten": os.environ["LLTM_JIT_CPU_RECURRENCE"] = "aten"
        else: os.environ.pop("LLTM_JIT_CPU_RECURRENCE", None)
        fn = reference_lltm if cfg == "eager" else lltm_jit.lltm
        fb(fn); t = time.perf_counter(); fb(fn); fb(fn); res.setdefault(cfg, []).append((time.perf_counter() - t) / 2 * 1e6)
for k, v in res.items(): print(f"{B}x{F}x{S} {k:8s} best {min(v):9.1f} us median {statistics.median(v):9.1f}")
