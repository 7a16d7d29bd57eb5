"""The build's budget, measured as a user meets it: a cold first import, a warm import, and an
edit of each source file (and of a header every file includes) followed by `lltm_jit.reload`.

    python benchmarks/build_time.py [--tutorial] [--edits all|none] [--out FILE.json]

Every import runs in a fresh process with a fresh cache directory, as a new user's would; the edits
run in one process, as in a notebook, on a copy of the sources. --tutorial first times the
tutorial's single-file extension (the shape of extension-cpp's lltm.cpp: torch/extension.h, the
cell in ATen operations, a pybind11 module) built with torch.utils.cpp_extension.load, the yardstick
of the build issue. Prints a table; --out saves every number as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent  # --repo times another checkout

TUTORIAL = r"""
#include <torch/extension.h>
#include <vector>

torch::Tensor d_sigmoid(torch::Tensor z) { auto s = torch::sigmoid(z); return (1 - s) * s; }
torch::Tensor d_tanh(torch::Tensor z) { return 1 - z.tanh().pow(2); }
torch::Tensor d_elu(torch::Tensor z, torch::Scalar alpha = 1.0) {
  auto e = z.exp();
  auto mask = (alpha * (e - 1)) < 0;
  return (z > 0).type_as(z) + mask.type_as(z) * (alpha * e);
}

std::vector<torch::Tensor> forward(torch::Tensor input, torch::Tensor weights, torch::Tensor bias,
                                   torch::Tensor old_h, torch::Tensor old_cell) {
  auto X = torch::cat({old_h, input}, 1);
  auto gate_weights = torch::addmm(bias, X, weights.transpose(0, 1));
  auto gates = gate_weights.chunk(3, 1);
  auto input_gate = torch::sigmoid(gates[0]), output_gate = torch::sigmoid(gates[1]);
  auto candidate_cell = torch::elu(gates[2], 1.0);
  auto new_cell = old_cell + candidate_cell * input_gate;
  auto new_h = torch::tanh(new_cell) * output_gate;
  return {new_h, new_cell, input_gate, output_gate, candidate_cell, X, gate_weights};
}

std::vector<torch::Tensor> backward(torch::Tensor grad_h, torch::Tensor grad_cell, torch::Tensor new_cell,
                                    torch::Tensor input_gate, torch::Tensor output_gate,
                                    torch::Tensor candidate_cell, torch::Tensor X, torch::Tensor gate_weights,
                                    torch::Tensor weights) {
  auto d_output_gate = torch::tanh(new_cell) * grad_h;
  auto d_new_cell = d_tanh(new_cell) * output_gate * grad_h + grad_cell;
  auto d_candidate_cell = input_gate * d_new_cell;
  auto d_input_gate = candidate_cell * d_new_cell;
  auto gates = gate_weights.chunk(3, 1);
  d_input_gate *= d_sigmoid(gates[0]);
  d_output_gate *= d_sigmoid(gates[1]);
  d_candidate_cell *= d_elu(gates[2]);
  auto d_gates = torch::cat({d_input_gate, d_output_gate, d_candidate_cell}, 1);
  auto d_weights = d_gates.t().mm(X);
  auto d_bias = d_gates.sum(0, true);
  auto d_X = d_gates.mm(weights);
  const auto state_size = grad_h.size(1);
  return {d_X.slice(1, 0, state_size), d_X.slice(1, state_size), d_weights, d_bias, d_new_cell};
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("forward", &forward, "LLTM forward");
  m.def("backward", &backward, "LLTM backward");
}
"""


def fresh_env(cache: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LLTM_JIT_")}
    env.update(PYTHONPATH=str(REPO), LLTM_JIT_CACHE_DIR=str(cache), PYTHONUNBUFFERED="1")
    return env


def timed(code: str, env: dict) -> tuple[float, str]:
    """(wall seconds, stdout) of `python -c code` in a fresh process, run in the timed checkout
    (`python -c` puts its working directory first on sys.path, before PYTHONPATH)."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=REPO)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"failed: {code}\n{done.stderr}")
    return seconds, done.stdout


def tutorial(scratch: Path) -> float:
    folder = scratch / "tutorial"
    folder.mkdir()
    (folder / "lltm.cpp").write_text(TUTORIAL)
    code = ("from torch.utils.cpp_extension import load; "
            f"load(name='lltm_tutorial', sources=[{str(folder / 'lltm.cpp')!r}], build_directory={str(folder)!r})")
    return timed(code, fresh_env(scratch / "unused-cache"))[0]


def manifest(cache: Path, key: str) -> dict:
    return json.loads((cache / key / "manifest.json").read_text())


def cold(cache: Path) -> dict:
    seconds, out = timed("import lltm_jit; print(lltm_jit.build_info()['key'])", fresh_env(cache))
    meta = manifest(cache, out.split()[-1])
    compiled = meta.get("compiled", meta.get("compile_seconds"))  # the latter: builds before the workspace
    return {"wall_s": round(seconds, 2), "build_s": meta["build_seconds"], "compiled": compiled,
            "critical_path": meta.get("critical_path", max(compiled.items(), key=lambda c: c[1][1])[0]),
            "cuda_archs": meta["cuda_archs"]}


def warm(cache: Path, runs: int = 7) -> dict:
    """A warm import's cost over `import torch`'s: after it in one process, and alone (its own
    torch import included, with the cached build's lookup running beside it) against `import
    torch` alone, fresh processes taken in turn."""
    code = ("import time; t0 = time.perf_counter(); import torch; t1 = time.perf_counter(); import lltm_jit; "
            "t2 = time.perf_counter(); print(t1 - t0, t2 - t1)")
    after, alone, torch_alone = [], [], []
    for _ in range(runs):
        after.append([float(x) for x in timed(code, fresh_env(cache))[1].split()])
        torch_alone.append(timed("import torch", fresh_env(cache))[0])
        alone.append(timed("import lltm_jit", fresh_env(cache))[0])
    return {"import_torch_s": round(statistics.median(s[0] for s in after), 3),
            "import_lltm_jit_over_torch_ms": round(statistics.median(s[1] for s in after) * 1000, 1),
            "alone_over_torch_alone_ms": round((statistics.median(alone) - statistics.median(torch_alone)) * 1000, 1)}


EDITS = r"""
import json, shutil, sys, time
from pathlib import Path
import lltm_jit
from lltm_jit import jit

copy = Path(sys.argv[1])
shutil.copytree(jit.source_dir(), copy)
spec = jit.BuildSpec.current("lltm_jit", src=copy)
targets = [p.name for p in spec.sources()] + [sys.argv[2]]
for number, name in enumerate(targets):
    path = copy / name
    path.write_text(path.read_text() + f"\n// edit {number}\n")
    start = time.perf_counter()
    build = lltm_jit.reload(copy)
    seconds = time.perf_counter() - start
    meta = json.loads((build.library.parent / "manifest.json").read_text())
    print(json.dumps({"file": name, "reload_s": round(seconds, 2), "compiled": meta["compiled"],
                      "reused": len(meta["reused"])}), flush=True)
"""


def edits(cache: Path, scratch: Path, header: str, tutorial_s: float | None) -> list[dict]:
    """One row per edit, each printed as it comes."""
    proc = subprocess.Popen([sys.executable, "-c", EDITS, str(scratch / "edited-src"), header], env=fresh_env(cache),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    rows = []
    for line in proc.stdout:
        rows.append(json.loads(line))
        row = rows[-1]
        ratio = f"  ({row['reload_s'] / tutorial_s:.2f} of the tutorial)" if tutorial_s else ""
        compiled = ", ".join(name for name in row["compiled"] if name != "link")
        print(f"  edit {row['file']:<28} reload {row['reload_s']:6.2f} s{ratio}  compiled: {compiled}", flush=True)
    if proc.wait() != 0:
        sys.exit(f"the edits failed:\n{proc.stderr.read()}")
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tutorial", action="store_true", help="also time the tutorial's single-file extension")
    parser.add_argument("--edits", choices=["all", "none"], default="all")
    parser.add_argument("--header", default="dtypes.h", help="the header to edit last (default: dtypes.h, which "
                        "every source includes)")
    parser.add_argument("--repo", type=Path, help="the checkout to time (default: this one)")
    parser.add_argument("--warm-runs", type=int, default=7, help="fresh processes per warm sample (0: none)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    global REPO
    REPO = (args.repo or REPO).resolve()
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        result = {"cores": len(os.sched_getaffinity(0))}
        if args.tutorial:
            result["tutorial_s"] = round(tutorial(scratch), 2)
        cache = scratch / "cache"
        result["cold"] = cold(cache)
        print(f"{result['cores']} cores; cold first import {result['cold']['wall_s']} s wall "
              f"(build {result['cold']['build_s']} s; critical path: {result['cold']['critical_path']})")
        if "tutorial_s" in result:
            print(f"  tutorial's single-file extension {result['tutorial_s']} s: "
                  f"ratio {result['cold']['wall_s'] / result['tutorial_s']:.2f}")
        if args.warm_runs:
            result["warm"] = warm(cache, args.warm_runs)
            print(f"warm import: {result['warm']['import_lltm_jit_over_torch_ms']} ms over import torch "
                  f"({result['warm']['import_torch_s']} s); alone, {result['warm']['alone_over_torch_alone_ms']} "
                  "ms over import torch alone", flush=True)
        if args.edits == "all":
            result["edits"] = edits(cache, scratch, args.header, result.get("tutorial_s"))
    if args.out:
        args.out.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
