"""Where the time of one fwd+bwd goes with the step path's products beside its loops and without
(beside.patch's LLTM_JIT_BESIDE): a profiler trace of one call a setting, summed by stream. For each
stream its kernels' count, busy time and span; for our step kernels the mean time from one launch's
start to the next (a step) and their mean duration, so that a slower loop (the products holding
multiprocessors that its kernels wait for) tells apart from products that run slowly beside it.

    PYTHONPATH=. python3 beside_timeline.py 256x512x1024:bfloat16 0 1 2
"""

import collections
import json
import os
import sys
import tempfile

import torch

from lltm_jit import lltm_sequence


def inputs(spec):
    size, dtype = spec.split(":")
    B, F, S = map(int, size.split("x"))
    torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
    dtype, gen = getattr(torch, "float32" if dtype == "tf32" else dtype), torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(64, B, F, device="cuda", generator=gen).to(dtype).requires_grad_()
    w = (torch.randn(3 * S, S + F, device="cuda", generator=gen) / (S + F) ** 0.5).to(dtype).requires_grad_()
    b = (torch.randn(3 * S, device="cuda", generator=gen) / 10).to(dtype).requires_grad_()
    return x, w, b


def both(x, w, b):
    torch.autograd.grad(lltm_sequence(x, w, b)[0].float().sum(), [x, w, b])


def kernels(fn):
    """The trace's kernels as (name, stream, start µs, duration µs)."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "trace.json")
        prof.export_chrome_trace(path)
        with open(path) as f:
            events = json.load(f)["traceEvents"]
    return [(e["name"], e.get("args", {}).get("stream", e.get("tid")), float(e["ts"]), float(e.get("dur", 0)))
            for e in events if e.get("cat") == "kernel"]


def report(label, found):
    begin = min(start for _, _, start, _ in found)
    end = max(start + dur for _, _, start, dur in found)
    print(f"{label}: {len(found)} kernels over {end - begin:.0f} us")
    by_stream = collections.defaultdict(list)
    for name, stream, start, dur in found:
        by_stream[stream].append((name, start, dur))
    for stream, items in sorted(by_stream.items(), key=lambda kv: -len(kv[1])):
        first, last = min(s for _, s, _ in items), max(s + d for _, s, d in items)
        busy = sum(d for _, _, d in items)
        print(f"  stream {stream}: {len(items)} kernels, busy {busy:.0f} us, from {first - begin:.0f} to "
              f"{last - begin:.0f} us")
    for kind in ("step_backward_kernel", "step_forward"):
        steps = sorted((s, d) for name, _, s, d in found if kind in name)
        if len(steps) > 1:
            gaps = [b[0] - a[0] for a, b in zip(steps, steps[1:])]
            print(f"  {kind}: {len(steps)} launches, a step {sum(gaps) / len(gaps):.2f} us, the kernel "
                  f"{sum(d for _, d in steps) / len(steps):.2f} us, from {steps[0][0] - begin:.0f} to "
                  f"{steps[-1][0] + steps[-1][1] - begin:.0f} us")


def main():
    spec, settings = sys.argv[1], sys.argv[2:]
    args = inputs(spec)
    for setting in settings:
        os.environ["LLTM_JIT_BESIDE"] = setting
        for _ in range(3):
            both(*args)
        torch.cuda.synchronize()
        report(f"{spec} LLTM_JIT_BESIDE={setting}", kernels(lambda: both(*args)))


if __name__ == "__main__":
    main()
