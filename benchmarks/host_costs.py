#!/usr/bin/env python3
"""Host time per call of the operations a small CUDA step is made of (no events, no profiler):
each timed as the wall time of many back-to-back calls on tiny tensors, so that the device
keeps up and the host's cost is what is measured.

  PYTHONPATH=. python3 benchmarks/host_costs.py [--size 16x32x128]
"""

import argparse
import math

import torch

import lltm_jit  # noqa: F401 (registers torch.ops.lltm_jit)
from benchmarks.step import STEP, Case, Size
from benchmarks.timing import median_seconds


def host_us(fn, calls=200, rounds=15, events=False):
    """Median over rounds of the time per call: the host's wall time, or with `events` the
    device's time between CUDA events around the round (what bench.py reads)."""
    device = torch.device("cuda")
    [seconds] = median_seconds([fn], device, warmup=20, repeats=rounds, budget=math.inf, calls=calls,
                               host=not events)
    return seconds * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", default="16x32x128", type=Size.parse)
    args = parser.parse_args()
    case = Case.make(args.size, torch.float32, torch.device("cuda"))
    b, s = args.size.batch, args.size.state_size
    x, h, c = (t.detach() for t in (case.input, case.old_h, case.old_cell))
    w, bias = case.module.weights.detach(), case.module.bias.detach()
    hx = torch.cat([h, x], 1)
    gh, gc = case.grads
    ops = torch.ops.lltm_jit
    _, _, gates = ops.forward(x, w, bias, h, c)
    d_gates = torch.randn_like(gates)
    d_w = torch.empty_like(w)
    rows = {
        "torch.empty": lambda: torch.empty((b, s), device="cuda"),
        "torch.cat [h, x]": lambda: torch.cat([h, x], 1),
        "torch.addmm (gates)": lambda: torch.addmm(bias, hx, w.t()),
        "torch.mm (gates, no bias)": lambda: torch.mm(hx, w.t()),
        "torch.mm d_gates @ W": lambda: torch.mm(d_gates, w),
        "torch.mm d_gates^T @ hx": lambda: torch.mm(d_gates.t(), hx),
        "mm_out into narrow column block": lambda: torch.mm(d_gates.t(), h, out=d_w.narrow(1, 0, s)),
        "h.add_(0) (one kernel launch)": lambda: h.add_(0),
        "ops.forward": lambda: ops.forward(x, w, bias, h, c),
        "ops.backward": lambda: ops.backward(gh, gc, x, w, h, gates, c, [True, True, True]),
    }
    with torch.no_grad():
        results = {name: host_us(fn) for name, fn in rows.items()}
    for name in ("eager", "lltm_jit", "lstmcell"):
        runner = STEP.backends[name](case)
        results[f"{name} fwd+bwd step"] = host_us(runner.train, calls=50)
        results[f"{name} fwd+bwd step, CUDA events"] = host_us(runner.train, calls=50, events=True)
        results[f"{name} fwd+bwd step, 10 calls a round"] = host_us(runner.train, calls=10, rounds=75)
        with torch.no_grad():
            results[f"{name} fwd step (no_grad)"] = host_us(runner.forward, calls=100)
    print(f"us per call (host wall time unless said), {args.size} float32, {torch.cuda.get_device_name()}, torch {torch.__version__}")
    for name, t in results.items():
        print(f"{t:8.1f}  {name}")


if __name__ == "__main__":
    main()
