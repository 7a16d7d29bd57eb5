"""Where a persistent step's time goes, without hardware counters: the sequence op timed in copies
of the sources with one stage of the persistent kernels (both families) left out, the stage's cost being
the difference (their results are wrong; only their times count). Each copy builds in a cache of its
own, in parallel, and the copies are timed in turn, `--rounds` times, forward under no_grad and
forward + backward (CUDA events, the median of 15 samples of 5 calls, T = 64).

    PYTHONPATH=. python3 -m benchmarks.stages --sizes 1024x256x256:bfloat16,128x512x512:float16

Stages: `product` (each step's product over W_h: no warp takes a unit, no thread a column), `gather` (the forward's gather
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
HEADERS = [f"{family}_{direction}.cuh" for family in ("tensor_core", "persistent") for direction in ("forward", "backward")]
# Where each kernel's step product starts, and the same with no warp or thread taking it.
PRODUCTS = {
    "tensor_core_forward.cuh": ("const bool unit = u < m_tiles * splits;", "const bool unit = false;"),
    "tensor_core_backward.cuh": ("for (int u = threadIdx.y; u < m_tiles * splits; u += kTensorWarps) {",
                                 "for (int u = threadIdx.y; u < 0; u += kTensorWarps) {"),
    "persistent_forward.cuh": ("if (col < W) {", "if (false) {"),
    "persistent_backward.cuh": ("for (int q = begin + half; q < end; q += 2) {", "for (int q = end; q < end; q += 2) {"),
}
# The group's counter: arrive_and_wait, or its halves (the forwards arrive, store, then wait).
WAIT = re.compile(r"(?:arrive_and_wait\(arrivals, [^;]*\)|arrive\(arrivals\)|wait_for\(arrivals, [^;]*\));")
GATHER = re.compile(r"gather_(?:rows|operand|packs)<[^;]*;", re.S)


def left_out(stage: str, name: str, text: str) -> str:
    """Kernel header `name`'s text with `stage` left out."""
    changed = "the kernels changed: update benchmarks/stages.py"
    (product, none), forward = PRODUCTS[name], name.endswith("forward.cuh")
    assert product in text and WAIT.search(text) and (GATHER.search(text) or not forward), changed
    if stage == "product":
        return text.replace(product, none)
    if stage == "gather":
        return GATHER.sub("", text) if forward else text
    if stage == "barrier":
        return WAIT.sub("__syncthreads();", GATHER.sub("", text) if forward else text)
    raise ValueError(stage)


def copy_tree(dest: Path, stage: str | None) -> None:
    for name in ("lltm_jit", "src"):
        shutil.copytree(ROOT / name, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
    if stage is not None:
        for name in HEADERS:
            header = dest / "src" / name
            header.write_text(left_out(stage, name, header.read_text()))


TIMING = r"""
import sys, torch
from lltm_jit import lltm_sequence
label, specs = sys.argv[1], sys.argv[2:]
for spec in specs:
    size, dtype, *flags = spec.split(":")  # flags: dx, the input's gradient too (bench.py's fwd+bwd); paired
    B, F, S = map(int, size.split("x"))
    torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"  # float32 with TF32 products
    dtype, gen = getattr(torch, "float32" if dtype == "tf32" else dtype), torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(64, B, F, device="cuda", generator=gen).to(dtype).requires_grad_("dx" in flags)
    w = (torch.randn(3 * S, S + F, device="cuda", generator=gen) / (S + F) ** 0.5).to(dtype).requires_grad_()
    b = torch.zeros(3 * S, device="cuda", dtype=dtype, requires_grad=True)
    paired = {"paired": True} if "paired" in flags else {}  # the tiling for two launches at once
    def forward():
        with torch.no_grad():
            lltm_sequence(x, w, b, **paired)
    def both():
        torch.autograd.grad(lltm_sequence(x, w, b, **paired)[0].float().sum(), [x, w, b] if "dx" in flags else [w, b])
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
