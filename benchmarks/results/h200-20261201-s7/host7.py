"""Where the host's time goes in one small sequence fwd+bwd (as bench.py times it)."""
import statistics, time
import torch
import lltm_jit
from torch.profiler import ProfilerActivity, profile

torch.backends.cuda.matmul.allow_tf32 = False
T, B, F, S = 64, 16, 32, 128
module = lltm_jit.LLTMSequence(F, S, device="cuda")
x = torch.randn(T, B, F, device="cuda", requires_grad=True)
lstm = torch.nn.LSTM(F, S, device="cuda")
leaves = (x, module.weights_l0, module.bias_l0)

def phases(fwd, params):
    torch.cuda.synchronize(); a = time.perf_counter()
    out = fwd()[0]
    b = time.perf_counter()
    loss = out.sum()
    c = time.perf_counter()
    torch.autograd.grad(loss, params)
    d = time.perf_counter()
    torch.cuda.synchronize(); e = time.perf_counter()
    return b - a, c - b, d - c, e - d, e - a

for name, fwd, params in (("ours", lambda: module(x), leaves), ("lstm", lambda: lstm(x), (x, *lstm.parameters()))):
    for _ in range(20):
        phases(fwd, params)
    rows = [phases(fwd, params) for _ in range(100)]
    med = [statistics.median(col) * 1e6 for col in zip(*rows)]
    print(f"{name}: host forward {med[0]:.0f} us, sum {med[1]:.0f}, autograd.grad {med[2]:.0f}, then sync {med[3]:.0f}; total {med[4]:.0f}")
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as prof:
    for _ in range(5):
        phases(lambda: module(x), leaves)
print(prof.key_averages(group_by_input_shape=True).table(sort_by="self_cpu_time_total", row_limit=14, max_name_column_width=40, max_shapes_column_width=50))
