"""Times lltm_jit's CPU step op and sequence op in bfloat16/float16 against eager and nn peers.
usage: python half_bench.py [backends]  -- prints median ms of a few calls."""
import sys, time, statistics, torch, lltm_jit
from lltm_jit.reference import reference_lltm as lltm_reference
torch.manual_seed(0)
only = sys.argv[1].split(",") if len(sys.argv) > 1 else ["ours", "eager", "lstmcell"]
def timeit(f, calls, reps=5):
    f()
    out = []
    for _ in range(reps):
        s = time.perf_counter()
        for _ in range(calls): f()
        out.append((time.perf_counter() - s) / calls * 1e3)
    return statistics.median(out)
for dtype in (torch.bfloat16, torch.float16):
    for (B, F, S, calls) in [(16, 32, 128, 20), (64, 256, 256, 5), (256, 512, 1024, 1)]:
        x = torch.randn(B, F, dtype=dtype); h = torch.randn(B, S, dtype=dtype); c = torch.randn(B, S, dtype=dtype)
        w = (torch.randn(3 * S, S + F) / (S + F) ** 0.5).to(dtype).requires_grad_()
        b = torch.randn(3 * S, dtype=dtype).requires_grad_()
        cell = torch.nn.LSTMCell(F, S).to(dtype)
        fns = {"ours": lambda: lltm_jit.lltm(x, w, b, h, c), "eager": lambda: lltm_reference(x, w, b, h, c),
               "lstmcell": lambda: cell(x, (h, c))}
        for name in only:
            if name not in fns: continue
            if S == 1024 and name != "ours" and "big" not in sys.argv: continue
            fwd = timeit(lambda: fns[name](), calls)
            def fb():
                out = fns[name](); (out[0].float().sum() + out[1].float().sum()).backward()
            both = timeit(fb, calls)
            print(f"step {B}x{F}x{S} {str(dtype)[6:]:8s} {name:9s} fwd {fwd:9.3f} ms  fwd+bwd {both:9.3f} ms", flush=True)
    for (T, B, F, S, calls) in [(64, 16, 32, 128, 3), (64, 64, 256, 512, 1)]:
        m = lltm_jit.LLTMSequence(F, S).to(dtype); xs = torch.randn(T, B, F, dtype=dtype)
        fwd = timeit(lambda: m(xs), calls, 3)
        both = timeit(lambda: m(xs)[0].float().sum().backward(), calls, 3)
        print(f"seq T={T} {B}x{F}x{S} {str(dtype)[6:]:8s} ours      fwd {fwd:9.3f} ms  fwd+bwd {both:9.3f} ms", flush=True)
