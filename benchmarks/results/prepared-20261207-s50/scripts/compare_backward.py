"""The streamed backward against the step path's on the same saved forward (session 50, from a
helper's check): for each (T, B, F, S) and half type, the op's backward forced streamed and forced
per step, and each gradient's largest difference over the step path's largest magnitude; whether
the streamed kernel ran. T = 0 and 1, states past and below whole clusters, lengths of 0..T."""
import os
import sys

import torch

sys.path.insert(0, "tests")
from helpers import cuda_kernels, ran  # noqa: E402

import lltm_jit  # noqa: E402,F401

op = torch.ops.lltm_jit


def backward(kernel, args):
    os.environ["LLTM_JIT_SEQUENCE_KERNEL"] = kernel
    args = list(args)
    args[9] = args[9].clone()  # the backward overwrites the pre-activations with their gradients
    out = []
    names = cuda_kernels(lambda: out.append(op.sequence_backward(*args)))
    return out[0], ran(names, "streamed_backward")


torch.manual_seed(0)
SIZES = [(5, 70, 9, 72, True), (3, 130, 16, 200, True), (1, 64, 8, 8, False), (0, 65, 8, 32, True),
         (2, 65, 8, 40, False), (1, 33, 8, 96, True), (6, 256, 32, 1024, True), (4, 100, 8, 136, True),
         (9, 64, 8, 128, False), (64, 256, 512, 1024, False)]
for T, B, F, S, with_lengths in SIZES:
    for dtype in (torch.bfloat16, torch.float16):
        def rand(*shape, scale=1.0):
            return (torch.randn(*shape, device="cuda") * scale).to(dtype)
        x, w, b = rand(T, B, F), rand(3 * S, S + F, scale=(S + F) ** -0.5), rand(3 * S)
        h0, c0 = rand(B, S), rand(B, S)
        lengths = torch.randint(0, T + 1, (B,)) if with_lengths else None
        os.environ["LLTM_JIT_SEQUENCE_KERNEL"] = "step"
        o, h_n, c_n, gates, cells = op.sequence_forward(x, w, b, h0, c0, lengths, True, False)
        args = [torch.randn_like(o), torch.randn_like(h_n), torch.randn_like(c_n), x, w, h0, c0, lengths, o, gates,
                cells, [True, True, True], False]
        (streamed, kernel_ran), (step, _) = backward("streamed", args), backward("step", args)
        errors = [round(((u.float() - v.float()).abs().max() / (v.float().abs().max() + 1e-9)).item(), 4)
                  if u.numel() else 0 for u, v in zip(streamed, step)]
        print(T, B, F, S, dtype, "streamed" if kernel_ran else "NOT streamed", errors, flush=True)
