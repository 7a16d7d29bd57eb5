"""Whether the CUDA kernels of this checkout compile to the same code as those of another revision,
so that a change meant not to alter them (a refactor, a file split) can be shown not to without a
GPU: every .cu file of src/ is compiled to PTX for one architecture in both trees, and each kernel
is compared up to a consistent renaming of its virtual registers and labels, the operand order of
a comparison (setp.gt a, b is setp.lt b, a) and of a commutative operation (add a, b is add b, a),
and the pairing of registers that are set to a constant (alike lines that fix no pairing). Kernels
and the symbols in their bodies are compared by their demangled names; `--rename OLD=NEW` replaces
a name's text in the base tree's, for a change that renames a type. Needs nvcc, c++filt and a CUDA
build of torch (its headers).

    python -m benchmarks.same_kernels --base HEAD~1 [--arch 90] [--rename c10::Half=lltm::half_t]

Prints each kernel that differs and exits 1 if any does (or if a kernel is in one tree only).
"""

import argparse
import concurrent.futures
import os
import re
import subprocess
import sys
import tempfile
import types
from pathlib import Path

from torch.utils.cpp_extension import include_paths

ROOT = Path(__file__).resolve().parent.parent
# The build's flags without importing lltm_jit itself, whose import builds the extension.
sys.modules.setdefault("lltm_jit", types.ModuleType("lltm_jit")).__path__ = [str(ROOT / "lltm_jit")]
from lltm_jit.jit.env import cuda_home  # noqa: E402
from lltm_jit.jit.spec import BuildSpec  # noqa: E402
TOKEN = re.compile(r"%[a-z]+\d+|\$L__BB\d+_\d+")
ANONYMOUS = re.compile(r"_GLOBAL__N__[0-9a-f]+_|_INTERNAL_[0-9a-f]+_")
KERNEL = re.compile(r"^(?:\.visible )?\.entry (\S+)\((.*?)\n}\n", re.S | re.M)
SYMBOL = re.compile(r"\b(_Z\w+?)(_param_\d+)?\b")  # a kernel's parameters are named after it
NOT_DEFINING = ("st.", "bar", "bra", "@", "ret", "red.", "atom")
# Two-operand operations whose operands may come in either order with the same result.
COMMUTATIVE = re.compile(r"((?:add|mul|and|or|xor|min|max)(?:\.\w+)*) (\S+), (\S+), (\S+);")


def ptx_kernels(src: Path, arch: str, out: Path, renames: list[tuple[str, str]]) -> dict[str, list[str]]:
    """Each kernel of src/*.cu, by demangled name: its PTX lines, whitespace collapsed, comparisons as
    < or <=, symbols demangled and renamed."""
    flags = [*BuildSpec("lltm_jit", (), src).nvcc_flags(), f"-arch=sm_{arch}"]
    for path in include_paths():
        flags += ["-isystem", path]
    nvcc = os.path.join(cuda_home(), "bin", "nvcc")

    def compile_one(cu: Path) -> str:
        target = out / (cu.stem + ".ptx")
        subprocess.run([nvcc, *flags, "-ptx", str(cu), "-o", str(target)], check=True, cwd=src)
        return target.read_text()

    kernels = {}
    with concurrent.futures.ThreadPoolExecutor(os.cpu_count()) as pool:
        for text in pool.map(compile_one, sorted(src.glob("*.cu"))):
            text = ANONYMOUS.sub("_", _demangled(text, renames))  # internal names carry a hash per compile
            for name, body in KERNEL.findall(text):
                kernels[name] = [_canonical(line) for line in body.splitlines() if _kept(line)]
    return kernels


def _demangled(text: str, renames: list[tuple[str, str]]) -> str:
    """text with each mangled symbol demangled, renamed and its spaces removed (KERNEL reads the name
    up to the first space)."""
    symbols = sorted({m.group(1) for m in SYMBOL.finditer(text)})
    out = subprocess.run(["c++filt"], input="\n".join(symbols), capture_output=True, text=True, check=True)
    names = {}
    for symbol, name in zip(symbols, out.stdout.splitlines()):
        for old, new in renames:
            name = name.replace(old, new)
        names[symbol] = name.replace(" ", "")
    return SYMBOL.sub(lambda m: names[m.group(1)] + (m.group(2) or ""), text)


def _kept(line: str) -> bool:
    return bool(line.strip()) and not line.strip().startswith(".reg")


def _canonical(line: str) -> str:
    line = " ".join(line.split())
    m = re.fullmatch(r"setp\.(gt|ge)\.(\S+) (\S+), (\S+), (\S+);", line)
    if m:
        op, kind, p, a, b = m.groups()
        line = f"setp.{dict(gt='lt', ge='le')[op]}.{kind} {p}, {b}, {a};"
    return line


def same(a: list[str], b: list[str]) -> str | None:
    """None where the two kernels' lines match under one renaming; else where they part."""
    if len(a) != len(b):
        return f"{len(a)} lines against {len(b)}"
    forward, backward = {}, {}
    constants_a, constants_b = set(), set()

    def fits(x, y):  # x's tokens and y's agree with the renaming so far, and among themselves
        here, back = {}, {}
        return all(forward.get(s, here.setdefault(s, t)) == t and backward.get(t, back.setdefault(t, s)) == s
                   for s, t in zip(TOKEN.findall(x), TOKEN.findall(y)))

    for i, (x, y) in enumerate(zip(a, b)):
        if TOKEN.sub("@", x) != TOKEN.sub("@", y):
            return f"line {i}: {x} | {y}"
        m = COMMUTATIVE.fullmatch(y)
        if m and not fits(x, y):
            op, d, u, v = m.groups()
            swapped = f"{op} {d}, {v}, {u};"
            if TOKEN.sub("@", swapped) == TOKEN.sub("@", x) and fits(x, swapped):
                y = swapped
        m = re.fullmatch(r"mov\.\w+ (%\w+), ([-%\w.]+);", x)
        if m and (not m.group(2).startswith("%") or m.group(2) in constants_a):
            constants_a.add(m.group(1))
            constants_b.add(TOKEN.findall(y)[0])
            continue
        if not x.startswith(NOT_DEFINING):
            constants_a.difference_update(TOKEN.findall(x)[:1])
            constants_b.difference_update(TOKEN.findall(y)[:1])
        for s, t in zip(TOKEN.findall(x), TOKEN.findall(y)):
            if forward.setdefault(s, t) != t or backward.setdefault(t, s) != s:
                return f"line {i}: {s} is {forward[s]} elsewhere: {x} | {y}"
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", required=True, help="the git revision to compare with")
    parser.add_argument("--arch", default="90", help="compute capability without the dot (default 90)")
    parser.add_argument("--rename", action="append", default=[], metavar="OLD=NEW",
                        help="replace OLD by NEW in the base tree's demangled names (repeatable)")
    args = parser.parse_args()
    renames = [tuple(pair.split("=", 1)) for pair in args.rename]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        base = tmp / "base"
        for name in ("base", "ptx-base", "ptx-here"):
            (tmp / name).mkdir()
        archive = subprocess.run(["git", "archive", args.base, "src"], cwd=ROOT, check=True, capture_output=True)
        subprocess.run(["tar", "-x", "-C", str(base)], input=archive.stdout, check=True)
        old = ptx_kernels(base / "src", args.arch, tmp / "ptx-base", renames)
        new = ptx_kernels(ROOT / "src", args.arch, tmp / "ptx-here", [])
    differ = [f"only in {args.base}: {k}" for k in old.keys() - new.keys()]
    differ += [f"only here: {k}" for k in new.keys() - old.keys()]
    differ += [f"{k}: {why}" for k in sorted(old.keys() & new.keys()) if (why := same(old[k], new[k]))]
    print(f"{len(old.keys() & new.keys())} kernels in both trees; {len(differ)} differ")
    for line in differ:
        print("  " + line[:300])
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
