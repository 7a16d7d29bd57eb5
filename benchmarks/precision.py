"""How far the sequence op's half-type results drift from float64 over long sequences, next to
an eager loop's in the same dtype (the reference, step by step, as a user would write it).

    python -m benchmarks.precision [--device cuda] [--seeds 8] [--sizes 4x8x32,16x32x64] [--time 256]

For each size, dtype and (on CUDA) kernel path, and for each of output, h_n, c_n and the five
gradients: the mean over seeds of our relative error against float64 (over the same inputs, rounded to
the dtype), the eager loop's, their ratio, and the worst ratio of one seed. A ratio at most 1 means ours drifts no more than eager's.
"""

import argparse
import math
import os

import torch

import lltm_jit
from lltm_jit.reference import reference_lltm_sequence

from .cases import random_arguments, rel_err

NAMES = ["output", "h_n", "c_n", "d_input", "d_weights", "d_bias", "d_h0", "d_c0"]


def sequence_args(time, batch, features, state, seed, device):
    """Random float64 (input, weights, bias, h0, c0) on `device`, and upstream gradients."""
    gen = torch.Generator().manual_seed(seed)
    args = random_arguments(batch, features, state, time=time, generator=gen)
    upstream = [torch.randn(*shape, generator=gen, dtype=torch.float64)
                for shape in ((time, batch, state), (batch, state), (batch, state))]
    return [a.to(device) for a in args], upstream


def outputs_and_grads(fn, args, upstream):
    """(output, h_n, c_n) and the gradients of the five arguments under the upstream gradients."""
    leaves = [a.detach().requires_grad_() for a in args]
    output, (h_n, c_n) = fn(leaves[0], leaves[1], leaves[2], (leaves[3], leaves[4]))
    outs = [output, h_n, c_n]
    grads = torch.autograd.grad(outs, leaves, [g.to(o) for g, o in zip(upstream, outs)])
    return [t.detach() for t in outs + list(grads)]


def errors(size, dtype, seed, device):
    """Per quantity: (ours, eager's) relative errors against float64 over the same, rounded, inputs
    (rounding the inputs to `dtype` is common to every implementation, not the op's error; over
    hundreds of steps it moves the exact result as much as the op's own rounding does). Elements
    whose exact value lies past the dtype's largest finite value count in neither: no result in the
    dtype holds them (a float16 d_weights over 256 steps can reach 8e4, which ours rounds to inf,
    and an eager loop's sum of per-step products to some finite value as far off). A result that
    overflowed where the exact value lies within range counts as the dtype's largest value of its
    sign: a sum a fraction of a percent past it rounds to inf (ours at an exact 65 147), yet lies
    as near as the largest value does. A NaN, from infinities of both signs, counts as infinitely far."""
    args, upstream = sequence_args(*size, seed, device)
    low = [a.to(dtype) for a in args]
    upstream = [u.to(dtype).double() for u in upstream]
    exact = outputs_and_grads(reference_lltm_sequence, [a.double() for a in low], upstream)
    ours = outputs_and_grads(lltm_jit.lltm_sequence, low, upstream)
    eager = outputs_and_grads(reference_lltm_sequence, low, upstream)
    largest = torch.finfo(dtype).max
    held = [e.abs() <= largest for e in exact]

    def error(got, want):
        error = rel_err(got.double().clamp(-largest, largest), want)
        return math.inf if math.isnan(error) else error

    return [(error(a[h], e[h]), error(b[h], e[h])) for a, b, e, h in zip(ours, eager, exact, held)]


def summary(size, dtype, seeds, device):
    """Per quantity: our mean error over the seeds, the eager loop's, and the worst ratio of one seed."""
    per_seed = [errors(size, dtype, seed, device) for seed in seeds]
    rows = []
    for i in range(len(NAMES)):
        ours, eager = [s[i][0] for s in per_seed], [s[i][1] for s in per_seed]
        rows.append((sum(ours) / len(ours), sum(eager) / len(eager), max(a / b for a, b in zip(ours, eager))))
    return rows


def report(label, rows):
    print(label)
    print(f"  {'':>9} {'ours':>9} {'eager':>9} {'ratio':>6} {'worst':>6}")
    for name, (ours, eager, worst) in zip(NAMES, rows):
        print(f"  {name:>9} {ours:9.2e} {eager:9.2e} {ours / eager:6.2f} {worst:6.2f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--sizes", default="4x8x32,16x32x64", help="batch x features x state, comma-separated")
    parser.add_argument("--time", type=int, default=256)
    args = parser.parse_args()
    paths = ["persistent", "streamed", "step"] if args.device.startswith("cuda") else ["loop"]
    print(f"torch {torch.__version__}, device {args.device}, T={args.time}, seeds 0..{args.seeds - 1}")
    for text in args.sizes.split(","):
        batch, features, state = (int(n) for n in text.split("x"))
        for dtype in (torch.bfloat16, torch.float16):
            for path in paths:
                # The CUDA op reads the variable at each call; "persistent" falls back to the step
                # path where the weights do not fit a block's shared memory, "streamed" (the half
                # types' streamed forward wherever it fits) to the other persistent kernels.
                os.environ["LLTM_JIT_SEQUENCE_KERNEL"] = "auto" if path == "persistent" else path
                rows = summary((args.time, batch, features, state), dtype, range(args.seeds), args.device)
                report(f"{text} {str(dtype)[6:]} {path}", rows)
    os.environ.pop("LLTM_JIT_SEQUENCE_KERNEL")


if __name__ == "__main__":
    main()
