"""The CUDA step path's host cost, with its CUDA graphs and without (LLTM_JIT_STEP_GRAPHS=0): for
each size, forward under no_grad and forward + backward (T = 64), the host's time until the call
returns and the wall time until the device is done (medians of 10 calls, each after a device
synchronisation), then one profiled call: the device's kernel time, the CUDA runtime calls and the
operators' own host time.

    PYTHONPATH=. python3 -m benchmarks.step_graphs 256x512x1024:bfloat16
"""

import os
import statistics
import sys
import time

import torch

from benchmarks.cases import DTYPES, random_arguments


def profile(fn):
    activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=activities) as prof:
        fn()
        torch.cuda.synchronize()
    events = prof.key_averages()
    cuda = torch.autograd.DeviceType.CUDA
    device = sum(e.device_time_total for e in events if e.device_type == cuda)
    runtime = sorted(((e.cpu_time_total, e.count, e.key) for e in events if e.key.startswith("cuda")), reverse=True)
    host = sorted(((e.self_cpu_time_total, e.count, e.key) for e in events if e.device_type != cuda), reverse=True)
    kernels = sorted(((e.device_time_total, e.count, e.key) for e in events if e.device_type == cuda), reverse=True)
    for label, rows in (("runtime", runtime), ("host self", host), ("kernels", kernels)):
        print(f"    {label}: " + "; ".join(f"{k[:50]} {n}x {t:.0f} us" for t, n, k in rows[:6]))
    print(f"    device total {device:.0f} us")


def main():
    from lltm_jit import lltm_sequence

    os.environ["LLTM_JIT_SEQUENCE_KERNEL"] = "step"
    for spec in sys.argv[1:]:
        size, dtype = spec.split(":")
        B, F, S = map(int, size.split("x"))
        generator = torch.Generator().manual_seed(0)
        input, weights, bias, _, _ = [t.to("cuda", DTYPES[dtype]) for t in random_arguments(B, F, S, time=64,
                                                                                         generator=generator)]
        weights.requires_grad_()
        bias.requires_grad_()

        def forward():
            with torch.no_grad():
                lltm_sequence(input, weights, bias)

        def both():
            torch.autograd.grad(lltm_sequence(input, weights, bias)[0].float().sum(), [weights, bias])

        for graphs in ("1", "0"):
            os.environ["LLTM_JIT_STEP_GRAPHS"] = graphs
            for mode, fn in (("fwd", forward), ("fwd+bwd", both)):
                for _ in range(3):
                    fn()
                host, wall = [], []
                for _ in range(10):
                    torch.cuda.synchronize()
                    start = time.perf_counter()
                    fn()
                    returned = time.perf_counter()
                    torch.cuda.synchronize()
                    host.append((returned - start) * 1e6)
                    wall.append((time.perf_counter() - start) * 1e6)
                print(f"{spec} graphs={graphs} {mode}: host {statistics.median(host):.0f} us, "
                      f"wall {statistics.median(wall):.0f} us", flush=True)
                profile(fn)


if __name__ == "__main__":
    main()
