"""Where a tensor-core persistent step's time goes, without hardware counters: the sequence op timed
in copies of the sources with one stage of both tensor-core kernels left out, the stage's cost being
the difference (their results are wrong; only their times count). Each copy builds in a cache of its
own, in parallel, and the copies are timed in turn, `--rounds` times, forward under no_grad and
forward + backward (CUDA events, the median of 15 samples of 5 calls, T = 64).

    PYTHONPATH=. python3 -m benchmarks.stages --sizes 1024x256x256:bfloat16,128x512x512:float16

Stages: `product` (each step's mma's over W_h: no warp takes a unit), `gather` (the forward's gather
of h from L2 after the barrier; the backward keeps its exchange), `barrier` (the gather and every
wait at the group's counter, left as a block barrier).
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
UNITS = "for (int u = threadIdx.y; u < m_tiles * splits; u += kTensorWarps) {"  # the backward's
UNIT = "const bool unit = u < m_tiles * splits;"  # the forward's
WAIT = re.compile(r"arrive_and_wait\(arrivals, [^;]*\);")
GATHER = re.compile(r"gather_(?:rows|operand)<[^;]*;", re.S)


def left_out(stage: str, forward: str, backward: str) -> tuple[str, str]:
    """The two kernel headers' text with `stage` left out."""
    changed = "the kernels changed: update benchmarks/stages.py"
    assert UNIT in forward and UNITS in backward and GATHER.search(forward), changed
    assert all(WAIT.search(text) for text in (forward, backward)), changed
    if stage == "product":
        return forward.replace(UNIT, UNIT.replace("u < m_tiles * splits", "false")), backward.replace(
            UNITS, UNITS.replace("u < m_tiles * splits", "u < 0"))
    if stage == "gather":
        return GATHER.sub("", forward), backward
    if stage == "barrier":
        return WAIT.sub("__syncthreads();", GATHER.sub("", forward)), WAIT.sub("__syncthreads();", backward)
    raise ValueError(stage)


def copy_tree(dest: Path, stage: str | None) -> None:
    for name in ("lltm_jit", "src"):
        shutil.copytree(ROOT / name, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
    if stage is not None:
        headers = [dest / "src" / f"tensor_core_{d}.cuh" for d in ("forward", "backward")]
        for header, text in zip(headers, left_out(stage, *(h.read_text() for h in headers))):
            header.write_text(text)


TIMING = r"""
import sys, torch
from lltm_jit import lltm_sequence
label, specs = sys.argv[1], sys.argv[2:]
for spec in specs:
    size, dtype = spec.split(":")
    B, F, S = map(int, size.split("x"))
    torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"  # float32 with TF32 products
    dtype, gen = getattr(torch, "float32" if dtype == "tf32" else dtype), torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(64, B, F, device="cuda", generator=gen).to(dtype)
    w = (torch.randn(3 * S, S + F, device="cuda", generator=gen) / (S + F) ** 0.5).to(dtype).requires_grad_()
    b = torch.zeros(3 * S, device="cuda", dtype=dtype, requires_grad=True)
    def forward():
        with torch.no_grad():
            lltm_sequence(x, w, b)
    def both():
        torch.autograd.grad(lltm_sequence(x, w, b)[0].float().sum(), [w, b])
    for mode, fn in (("fwd", forward), ("fwd+bwd", both)):
        for _ in range(5):
            fn()
        samples = []
        for _ in range(15):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(5):
                fn()
            end.record()
            end.synchronize()
            samples.append(start.elapsed_time(end) / 5 * 1000)
        print(f"{label:10} {spec:24} {mode:8} {sorted(samples)[7]:8.1f} us", flush=True)
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", required=True, help="BxFxS:dtype (tf32: float32 with TF32 products), comma-separated")
    parser.add_argument("--stages", default="product,gather,barrier")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    variants = [None, *args.stages.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        trees = {v: Path(tmp) / (v or "all") for v in variants}
        for stage, tree in trees.items():
            copy_tree(tree, stage)

        def env(tree):
            return {**os.environ, "PYTHONPATH": str(tree), "LLTM_JIT_CACHE_DIR": str(tree / "cache")}

        builds = [subprocess.Popen([sys.executable, "-c", "import lltm_jit"], env=env(t), cwd=t) for t in trees.values()]
        if any(b.wait() for b in builds):
            sys.exit("a build failed (its log is above)")
        print(f"{'left out':10} {'size':24} {'mode':8} {'median':>8}")
        for _ in range(args.rounds):
            for stage, tree in trees.items():
                subprocess.run([sys.executable, "-c", TIMING, stage or "nothing", *args.sizes.split(",")],
                               env=env(tree), cwd=tree, check=True)


if __name__ == "__main__":
    main()
