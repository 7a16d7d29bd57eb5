"""Quick exploratory timing of whole-sequence fwd+bwd on CUDA (T=64)."""
import os, statistics, sys, time
import torch
import lltm_jit
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
dev = "cuda"
T = 64
SIZES = [(16, 32, 128, torch.float32), (64, 256, 512, torch.float32), (256, 512, 1024, torch.float32), (256, 512, 1024, torch.bfloat16)]
if len(sys.argv) > 1:
    SIZES = [tuple(int(v) for v in s.split("x")[:3]) + ({"f32": torch.float32, "bf16": torch.bfloat16}[s.split("x")[3]],) for s in sys.argv[1:]]

def timeit(fn, reps=20):
    for _ in range(3): fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        s = torch.cuda.Event(enable_timing=True); e = torch.cuda.Event(enable_timing=True)
        s.record(); fn(); e.record(); e.synchronize(); times.append(s.elapsed_time(e))
    return statistics.median(times)

def peak(fn):
    torch.cuda.synchronize(); torch.cuda.empty_cache(); base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats(); fn(); torch.cuda.synchronize()
    return (torch.cuda.max_memory_allocated() - base) / 2**20

for B, F, S, dt in SIZES:
    torch.manual_seed(0)
    cell = lltm_jit.LLTM(F, S, device=dev, dtype=dt)
    x = torch.randn(T, B, F, device=dev, dtype=dt, requires_grad=True)
    lstm = torch.nn.LSTM(F, S, device=dev, dtype=dt)
    params = [x, cell.weights, cell.bias]
    def ours():
        o, (h, c) = lltm_jit.lltm_sequence(x, cell.weights, cell.bias)
        torch.autograd.grad(o.sum(), params)
    def loop_step():
        o, _ = lltm_jit.reference_lltm_sequence(x, cell.weights, cell.bias, step=lltm_jit.lltm)
        torch.autograd.grad(o.sum(), params)
    def loop_ref():
        o, _ = lltm_jit.reference_lltm_sequence(x, cell.weights, cell.bias)
        torch.autograd.grad(o.sum(), params)
    lp = [x, *lstm.parameters()]
    def cudnn():
        o, _ = lstm(x)
        torch.autograd.grad(o.sum(), lp)
    # correctness vs loop
    o1, _ = lltm_jit.lltm_sequence(x, cell.weights, cell.bias)
    o2, _ = lltm_jit.reference_lltm_sequence(x, cell.weights, cell.bias, step=lltm_jit.lltm)
    err = ((o1.float() - o2.float()).norm() / o2.float().norm()).item()
    row = {}
    for name, fn in [("ours", ours), ("loop_step", loop_step), ("loop_ref", loop_ref), ("cudnn", cudnn)]:
        row[name] = (timeit(fn), peak(fn))
    os.environ["LLTM_JIT_SEQUENCE_KERNEL"] = "step"
    row["ours_step"] = (timeit(ours), peak(ours))
    del os.environ["LLTM_JIT_SEQUENCE_KERNEL"]
    c = row["cudnn"][0]
    print(f"{B}x{F}x{S} {str(dt)[6:]} err={err:.1e} " + "  ".join(f"{k} {v[0]:.3f}ms ({v[0]/c:.2f}x) {v[1]:.0f}MiB" for k, v in row.items()), flush=True)
