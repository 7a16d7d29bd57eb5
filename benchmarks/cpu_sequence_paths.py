"""The CPU sequence op's recurrence paths against nn.LSTM, T = 64, 2 threads, interleaved in one
process: each round times every configuration once; prints the best and the median (issue 24).

    python benchmarks/cpu_sequence_paths.py BxFxS DTYPE ROUNDS CONFIG,...

CONFIG: lstm (nn.LSTM), default, or an LLTM_JIT_CPU_RECURRENCE value (avx512, packed, gemm,
aten); with :fwd, a no_grad forward instead of forward + backward; with :lengths, forward +
backward of a PackedSequence whose lengths are drawn from [1, T] (the same for every config).
"""
import os, sys, time, statistics, torch, lltm_jit
torch.set_num_threads(2)
B,F,S = map(int, sys.argv[1].split("x")); T=64
dtype = getattr(torch, sys.argv[2]); rounds = int(sys.argv[3]); configs = sys.argv[4].split(",")
torch.manual_seed(0)
m = lltm_jit.LLTMSequence(F, S, dtype=dtype); lstm = torch.nn.LSTM(F, S, dtype=dtype)
x = torch.randn(T,B,F,dtype=dtype, requires_grad=True)
lengths = torch.randint(1, T + 1, (B,))
def run(cfg):
    name, _, mode = cfg.partition(":")
    mod = lstm if name == "lstm" else m
    if name not in ("lstm", "default"): os.environ["LLTM_JIT_CPU_RECURRENCE"] = name
    else: os.environ.pop("LLTM_JIT_CPU_RECURRENCE", None)
    if mode == "fwd":
        with torch.no_grad(): mod(x)
    elif mode == "lengths":
        packed = torch.nn.utils.rnn.pack_padded_sequence(x, lengths, enforce_sorted=False)
        torch.autograd.grad(mod(packed)[0].data.sum(), (x, *mod.parameters()))
    else:
        torch.autograd.grad(mod(x)[0].sum(), (x, *mod.parameters()))
times = {c: [] for c in configs}
for c in configs: run(c); run(c)
for r in range(rounds):
    for c in configs:
        t = time.perf_counter(); run(c); times[c].append((time.perf_counter() - t) * 1e3)
base = {}
for c in configs:
    print(f"{B}x{F}x{S} {sys.argv[2]} {c:16s} best {min(times[c]):8.3f} ms  median {statistics.median(times[c]):8.3f} ms")
