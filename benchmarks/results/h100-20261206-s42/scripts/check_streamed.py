"""The streamed forward against the per-step path and float64, output by output: each size and
half type, LLTM_JIT_SEQUENCE_KERNEL=streamed and =step, the relative error of output, h_n, c_n
against the float64 reference of the same rounded inputs, and which forward kernel ran. Exits 1
unless every streamed error is below 1e-2 (the gate of the calls that time a variant)."""

import os
import sys

import torch

sys.path.insert(0, os.getcwd())
from lltm_jit import lltm_sequence, reference_lltm_sequence  # noqa: E402

SIZES = [(5, 70, 9, 72), (5, 130, 16, 200), (8, 256, 64, 1024), (64, 256, 512, 1024)]


def rel(a, b):
    return ((a.double() - b.double()).norm() / b.double().norm().clamp_min(1e-30)).item()


def forward_kernels(fn):
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return sorted({e.key.split("(")[0].split("<")[0] for e in prof.key_averages()
                   if "forward" in e.key and e.device_type == torch.autograd.DeviceType.CUDA})


streamed_errors = []
for time, batch, features, state in SIZES:
    g = torch.Generator(device="cuda").manual_seed(1)
    shapes = [(time, batch, features), (3 * state, state + features), (3 * state,), (batch, state), (batch, state)]
    scales = [1.0, (state + features) ** -0.5, 0.1, 0.5, 0.5]
    args64 = [torch.randn(s, generator=g, device="cuda", dtype=torch.float64) * k for s, k in zip(shapes, scales)]
    for dtype in (torch.bfloat16, torch.float16):
        args = [a.to(dtype) for a in args64]
        exact = reference_lltm_sequence(*[a.double() for a in args[:3]], (args[3].double(), args[4].double()))
        line = f"{time}x{batch}x{features}x{state} {str(dtype)[6:]:8}"
        for kernel in ("streamed", "step"):
            os.environ["LLTM_JIT_SEQUENCE_KERNEL"] = kernel
            out, (h, c) = lltm_sequence(args[0], args[1], args[2], (args[3], args[4]))
            errs = [rel(a, b) for a, b in zip((out, h, c), (exact[0], *exact[1]))]
            if kernel == "streamed":
                streamed_errors += errs
            names = forward_kernels(lambda: lltm_sequence(args[0], args[1], args[2], (args[3], args[4])))
            line += f" | {kernel}: " + " ".join(f"{e:.2e}" for e in errs) + f" {','.join(names)}"
        print(line, flush=True)
sys.exit(0 if all(e < 1e-2 for e in streamed_errors) else 1)
