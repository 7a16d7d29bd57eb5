#!/usr/bin/env python3
"""Benchmark lltm_jit against PyTorch: correctness first, then the time of one step.

For every size (batch x input_features x state_size) and dtype:
  1. the backends that compute the LLTM function (lltm_jit, the eager reference, torch.compile of
     the reference) are checked against the reference in float64 on fresh random inputs: both
     outputs and the gradients of all five inputs. A backend that fails is reported as FAILED and
     not timed, and the exit status is 1.
  2. one step is timed, forward only (under no_grad) and forward + backward (gradients of every
     input and parameter), for those backends and for PyTorch's LSTM cells, nn.LSTMCell and nn.LSTM
     (a different cell with four gates: speed peers only), and on CUDA for `gemm`, the matrix
     products of lltm_jit alone: the floor that its fused elementwise work is judged against.
  3. each time is set against a physical floor, measured on this device in the same run:
     max(FLOPs / matmul peak, bytes moved / copy bandwidth).

The table goes to stdout at the end; every number and the environment are saved as JSON, with a
plot of the speedups over eager, in --out.

examples:
  python bench.py                          # this machine's defaults (CUDA if there is a GPU)
  python bench.py --quick                  # one small size, a few seconds
  python bench.py --sizes 64x256x256 --dtypes float32,bfloat16 --backends eager,lltm_jit
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import shlex
import socket
import statistics
import sys
import time
from dataclasses import dataclass, field
from itertools import groupby
from pathlib import Path
from typing import Callable

import torch
from torch import nn

DTYPES = {"float64": torch.float64, "float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
# The largest relative error ||out - ref|| / ||ref|| accepted against the float64 reference.
TOLERANCES = {torch.float64: 1e-10, torch.float32: 1e-4, torch.bfloat16: 3e-2, torch.float16: 3e-2}
MODES = ("fwd", "fwd+bwd")
PEERS = ("compile", "lstmcell", "lstm")  # what lltm_jit competes with
DEFAULT_SIZES = {
    "cpu": "16x32x128,64x256x256,256x512x1024",
    "cuda": "16x32x128,256x512x1024,1024x1024x1024,4096x1024x1024",
}
QUICK_SIZE = "16x32x128"


# ---------------------------------------------------------------------------------------------
# Timing


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def measure(fn: Callable[[], object], device: torch.device, warmup: int, repeats: int, budget: float) -> list[float]:
    """Seconds per call of `fn`, one sample per repeat, after `warmup` calls.

    Stops early once `budget` seconds have passed, after at least 5 repeats. On CUDA the samples
    are CUDA event pairs around each call, read after a final synchronize: the device's time,
    which includes its idling while the host is still launching the kernels of a small step.
    """
    for _ in range(warmup):
        fn()
    synchronize(device)
    enough = min(5, repeats)
    deadline = time.perf_counter() + budget
    if device.type == "cuda":
        events = []
        while len(events) < repeats and (len(events) < enough or time.perf_counter() < deadline):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            events.append((start, end))
        synchronize(device)
        return [start.elapsed_time(end) / 1e3 for start, end in events]
    samples = []
    while len(samples) < repeats and (len(samples) < enough or time.perf_counter() < deadline):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return samples


def percentiles(samples: list[float]) -> tuple[float, float, float]:
    """(p10, median, p90)."""
    deciles = statistics.quantiles(samples, n=10, method="inclusive")
    return deciles[0], statistics.median(samples), deciles[-1]


# ---------------------------------------------------------------------------------------------
# The physical floor


@dataclass
class Machine:
    """What this device does at best, measured in this run."""

    copy_bytes_per_s: float  # bytes read + written per second by a large copy
    matmul_flops_per_s: dict[str, float]  # by dtype name, a large square matmul


def measure_machine(device: torch.device, dtypes: list[torch.dtype]) -> Machine:
    cuda = device.type == "cuda"
    src = torch.ones((1 << 30 if cuda else 1 << 28) // 4, device=device)  # 1 GiB; 256 MiB on a CPU
    dst = torch.empty_like(src)
    copy_s = percentiles(measure(lambda: dst.copy_(src), device, 2, 20, 1.0))[1]
    del src, dst
    # Big enough to reach the peak on a GPU; on a CPU a moderate size, well under a second.
    n = 8192 if cuda else 1024
    peaks = {}
    for dtype in dtypes:
        a, b = torch.randn(n, n, device=device, dtype=dtype), torch.randn(n, n, device=device, dtype=dtype)
        out = torch.empty_like(a)
        seconds = percentiles(measure(lambda: torch.mm(a, b, out=out), device, 2, 10, 1.0))[1]
        peaks[dtype_name(dtype)] = 2 * n**3 / seconds
    return Machine(2 * dst.nbytes / copy_s if False else 2 * (len(range(0))) or 0, peaks) if False else Machine(
        2 * 4 * ((1 << 30 if cuda else 1 << 28) // 4) / copy_s, peaks
    )
