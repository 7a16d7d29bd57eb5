"""Whether the per-step path would gain from running its batch as chains side by side: a model of
its forward step (a product h W_h^T into the pre-activations, then one elementwise pass that reads
them and writes the new h), T steps captured in one CUDA graph, the batch's rows split into 1, 2
or 4 chains, each on a stream of its own (forked from the capture and joined to it). A chain's
elementwise pass can then run beside another chain's product, where now each waits for the other
(benchmarks/NOTES.md, "Session 26"). It times the model, not lltm_jit's kernels; with `--ours` it
also times lltm_jit's forward on the per-step path at the same sizes, for scale.

    PYTHONPATH=. python3 -m benchmarks.chains [--sizes 256x1024:tf32,...] [--steps 64] [--ours]

Sizes are BxS:dtype with dtype float32, tf32 (float32 with TF32 products) or bfloat16 (whose model
writes the pre-activations in bfloat16, where the per-step path writes float).
"""

from __future__ import annotations

import argparse
import os

import torch

from benchmarks.timing import median_seconds

DEFAULT_SIZES = "256x1024:float32,256x1024:tf32,256x1024:bfloat16,1024x256:bfloat16"


def parse(spec: str) -> tuple[int, int, str]:
    shape, dtype = spec.split(":")
    batch, state = (int(n) for n in shape.split("x"))
    if dtype not in ("float32", "tf32", "bfloat16"):
        raise ValueError(f"{spec}: the dtype must be float32, tf32 or bfloat16")
    return batch, state, dtype


def model(batch: int, state: int, dtype: torch.dtype, chains: int, steps: int, device: torch.device):
    """One call: `steps` model steps of every chain, each chain on a stream of its own."""
    gen = torch.Generator().manual_seed(0)
    w = (torch.randn(3 * state, state, generator=gen) / state**0.5).to(device, dtype)
    rows = [batch // chains + (c < batch % chains) for c in range(chains)]
    h = [[torch.randn(r, state, generator=gen).to(device, dtype) for _ in range(2)] for r in rows]
    pre = [torch.empty(r, 3 * state, device=device, dtype=dtype) for r in rows]
    cuda = device.type == "cuda"
    streams = [torch.cuda.Stream(device) for _ in range(chains - 1)] if cuda else []

    def chain(c: int) -> None:
        for t in range(steps):
            torch.mm(h[c][t % 2], w.t(), out=pre[c])
            z = pre[c]
            torch.addcmul(z[:, :state], z[:, state:2 * state], z[:, 2 * state:], value=1e-3, out=h[c][(t + 1) % 2])

    def call() -> None:
        if not streams:  # one chain, or the CPU: in turn
            for c in range(chains):
                chain(c)
            return
        fork = torch.cuda.Event()
        fork.record()
        for c, stream in enumerate(streams, start=1):
            stream.wait_event(fork)
            with torch.cuda.stream(stream):
                chain(c)
        chain(0)
        for stream in streams:
            torch.cuda.current_stream().wait_stream(stream)

    return call


def ours(batch: int, state: int, dtype: torch.dtype, steps: int, device: torch.device):
    """lltm_jit's forward (no_grad) on the per-step path, 8 input features."""
    import lltm_jit

    gen = torch.Generator().manual_seed(1)
    x = torch.randn(steps, batch, 8, generator=gen).to(device, dtype)
    w = (torch.randn(3 * state, state + 8, generator=gen) / state**0.5).to(device, dtype)
    b = torch.randn(3 * state, generator=gen).to(device, dtype)

    def call() -> None:
        with torch.no_grad():
            lltm_jit.lltm_sequence(x, w, b)

    return call


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default=DEFAULT_SIZES)
    parser.add_argument("--steps", type=int, default=64)
    parser.add_argument("--chains", default="1,2,4")
    parser.add_argument("--ours", action="store_true", help="also lltm_jit's per-step forward (not graphed)")
    parser.add_argument("--budget", type=float, default=1.0, help="seconds of samples per function")
    args = parser.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    cuda = device.type == "cuda"
    counts = [int(c) for c in args.chains.split(",")]
    os.environ["LLTM_JIT_SEQUENCE_KERNEL"] = "step"
    timed = "graph replays" if cuda else "calls"
    print(f"{device}, torch {torch.__version__}; T = {args.steps}; us a step ({timed}; ours: calls)")
    for spec in args.sizes.split(","):
        batch, state, name = parse(spec)
        dtype = torch.bfloat16 if name == "bfloat16" else torch.float32
        torch.backends.cuda.matmul.allow_tf32 = name == "tf32"
        fns = [model(batch, state, dtype, n, args.steps, device) for n in counts]
        options = dict(warmup=3, repeats=200, budget=args.budget, graphs=cuda)
        seconds = median_seconds(fns, device, **options)
        if args.ours:
            options["graphs"] = False
            seconds += median_seconds([ours(batch, state, dtype, args.steps, device)], device, **options)
        per_step = [s / args.steps * 1e6 for s in seconds]
        cells = [f"{n} chains {us:7.2f} ({us / per_step[0]:.2f})" for n, us in zip(counts, per_step)]
        if args.ours:
            cells.append(f"ours {per_step[-1]:7.2f}")
        print(f"{spec:22} " + "  ".join(cells))
    torch.backends.cuda.matmul.allow_tf32 = False


if __name__ == "__main__":
    main()
