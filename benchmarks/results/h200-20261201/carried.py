"""Peak memory and time of a no_grad forward and of a frozen-weights backward, for the step op
and (where the tree has it) the sequence op. Usage: PYTHONPATH=<tree> python3 carried.py <label>"""
import statistics, sys, torch, lltm_jit
torch.backends.cuda.matmul.allow_tf32 = False
MiB = 2**20
label = sys.argv[1]

def measure(fn, reps=20):
    fn(); torch.cuda.synchronize(); torch.cuda.empty_cache()
    base = torch.cuda.memory_allocated(); torch.cuda.reset_peak_memory_stats()
    fn(); torch.cuda.synchronize()
    peak = (torch.cuda.max_memory_allocated() - base) / MiB
    times = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(); fn(); e.record(); e.synchronize(); times.append(s.elapsed_time(e) * 1000)
    return peak, statistics.median(times)

rows = []
B, F, S, dt = 4096, 1024, 1024, torch.bfloat16
cell = lltm_jit.LLTM(F, S, device="cuda", dtype=dt)
x = torch.randn(B, F, device="cuda", dtype=dt); h = torch.randn(B, S, device="cuda", dtype=dt); c = torch.randn_like(h)
def step_nograd():
    with torch.no_grad(): cell(x, (h, c))
cell.requires_grad_(False); xg = x.clone().requires_grad_()
def step_frozen():
    out = cell(xg, (h, c)); torch.autograd.grad(out[0].sum(), [xg])
rows += [("step 4096x1024x1024 bf16, no_grad forward", *measure(step_nograd)),
         ("step 4096x1024x1024 bf16, frozen weights fwd+bwd", *measure(step_frozen))]
if hasattr(lltm_jit, "lltm_sequence"):
    T, B, F, S, dt = 64, 256, 512, 1024, torch.float32
    layer = lltm_jit.LLTMSequence(F, S, device="cuda", dtype=dt)
    xs = torch.randn(T, B, F, device="cuda", dtype=dt)
    def seq_nograd():
        with torch.no_grad(): layer(xs)
    layer.requires_grad_(False); xsg = xs.clone().requires_grad_()
    def seq_frozen():
        out = layer(xsg)[0]; torch.autograd.grad(out.sum(), [xsg])
    rows += [("sequence T=64 256x512x1024 fp32, no_grad forward", *measure(seq_nograd, 10)),
             ("sequence T=64 256x512x1024 fp32, frozen weights fwd+bwd", *measure(seq_frozen, 10))]
for name, peak, us in rows:
    print(f"{label:6s} {name:58s} peak {peak:8.1f} MiB  {us:9.1f} us")
