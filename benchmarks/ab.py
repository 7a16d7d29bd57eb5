"""The sequence op of the working tree against the sources of one or more bases: all built in
parallel (caches of their own), then timed in turn, `--rounds` times (stages.py's timing: forward
under no_grad and forward + backward, T = 64, the median of 15 samples of 5 back-to-back calls).
A base is a git revision or a directory holding a tree's lltm_jit/ and src/ (what `git archive REV
lltm_jit src` unpacks to: the device's copy of the repository holds one commit, so older bases
travel as such directories). `--env NAME=VALUE` adds a row of the working tree with that variable
set (as LLTM_JIT_STEP_GRAPHS=0; several, comma-separated, in one row). Each round's lines go out as
they come; at the end a table has every row's medians of each round and its least over the first
base's.

    PYTHONPATH=. python3 -m benchmarks.ab --base HEAD~1 --sizes 256x512x1024:bfloat16 --env LLTM_JIT_STEP_GRAPHS=0
"""

import argparse
import collections
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.stages import TIMING

ROOT = Path(__file__).resolve().parent.parent


def summary(samples: dict[tuple[str, str, str], list[float]], labels: list[str]) -> str:
    """A table of samples[(label, size, mode)] (µs, one a round): a line for each size and mode in
    the order they came, each label's samples, and each label's least over the first label's."""
    cases = list(dict.fromkeys((size, mode) for _, size, mode in samples))
    rounds = {case: [samples.get((label, *case), []) for label in labels] for case in cases}
    cells = {case: [" ".join(f"{v:.1f}" for v in values) for values in rounds[case]] for case in cases}
    width = max(len(text) for text in [*labels, *(cell for row in cells.values() for cell in row)])
    lines = [f"{'size':24} {'mode':8} " + " ".join(f"{label:>{width}}" for label in labels)
             + "   least / " + labels[0]]
    for case in cases:
        base = rounds[case][0]
        ratios = [f"{min(values) / min(base):.3f}" if values and base else "-" for values in rounds[case][1:]]
        lines.append(f"{case[0]:24} {case[1]:8} " + " ".join(f"{cell:>{width}}" for cell in cells[case])
                     + "   " + " ".join(ratios))
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", required=True, action="append", help="a git revision or a tree's directory")
    parser.add_argument("--sizes", required=True, help="BxFxS:dtype (tf32: float32 with TF32 products), comma-separated; "
                        "BxFxS:dtype:dx times the input's gradient too, as bench.py does")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--env", action="append", default=[],
                        help="NAME=VALUE[,NAME=VALUE]: a row of the tree with them set")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        trees = {}
        for i, given in enumerate(args.base):
            label = f"base{i}" if len(args.base) > 1 else "base"
            print(f"{label}: {given}")
            if Path(given).is_dir():
                trees[label] = Path(given).resolve()
                continue
            trees[label] = Path(tmp) / label
            trees[label].mkdir()
            archive = subprocess.run(["git", "archive", given, "lltm_jit", "src"], cwd=ROOT, check=True,
                                     capture_output=True).stdout
            subprocess.run(["tar", "-x", "-C", str(trees[label])], input=archive, check=True)
        trees["new"] = ROOT
        with_env = [(f"new {e}", dict(pair.split("=", 1) for pair in e.split(","))) for e in args.env]
        rows = [(label, {}) for label in trees] + with_env

        def env(label, extra):
            tree = trees[label.split()[0]]
            cache = Path(tmp) / label.split()[0] / "cache"
            return {**os.environ, **extra, "PYTHONPATH": str(tree), "LLTM_JIT_CACHE_DIR": str(cache)}

        builds = [subprocess.Popen([sys.executable, "-c", "import lltm_jit"], env=env(label, {})) for label in trees]
        if any(b.wait() for b in builds):
            sys.exit("a build failed (its log is above)")
        samples = collections.defaultdict(list)
        for _ in range(args.rounds):
            for label, extra in rows:
                with subprocess.Popen([sys.executable, "-c", TIMING, label, *args.sizes.split(",")],
                                      env=env(label, extra), cwd=trees[label.split()[0]], stdout=subprocess.PIPE,
                                      text=True) as timing:
                    for line in timing.stdout:  # "label size mode median us", the label padded
                        print(line, end="", flush=True)
                        parts = line.split()
                        if len(parts) >= 5 and parts[-1] == "us":
                            samples[label, parts[-4], parts[-3]].append(float(parts[-2]))
                if timing.returncode:
                    sys.exit(f"the timing of {label} failed (its error is above)")
        print(summary(samples, [label for label, _ in rows]))


if __name__ == "__main__":
    main()
