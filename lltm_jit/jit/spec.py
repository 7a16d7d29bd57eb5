"""What to build: the sources, the compiler flags and the key that names the result.

The key of a build is a hash of everything that changes the binary: the sources' contents, the
compiler flags, torch's version and CUDA version, the Python ABI, the target GPU architectures and
the operator namespace. So an edit in ``src/`` or a torch upgrade gives a new key, and an unchanged
setup finds its library under the same key without running any tool.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import torch

from . import env

# Bump when the build recipe or the cache layout changes, so that old entries are not reused.
CACHE_FORMAT = 3
SOURCE_SUFFIXES = (".cpp", ".cu")
HEADER_SUFFIXES = (".h", ".cuh")
# -fno-trapping-math: lets GCC turn the selects in the CPU kernels' loops into vector blends
# (nothing here enables floating-point traps; NaN and inf behave as before). -fopenmp: without it
# at::parallel_for, inlined from ATen's headers, runs serially.
CXX_FLAGS = ("-O3", "-fPIC", "-fno-trapping-math", "-fopenmp")
# Flags after CXX_FLAGS for one file (the last -O wins). ops.cpp at -O1: the registrations, the
# autograd Nodes and the autocast wrappers are glue around the dispatcher, whose calls the
# optimiser does not speed up, and the file is a cold build's critical path.
CXX_FILE_FLAGS = {"ops.cpp": ("-O1",)}
# -l:libstdc++.so.6, ahead of the torch libraries: torch wheels built with gcc-toolset carry and
# export pieces of libstdc++ (its static libstdc++_nonshared.a), and with them first on the link
# line (and --as-needed, Ubuntu's default) the library binds its std:: references to those copies
# and records no libstdc++.so.6 at all. A std::ostringstream then mixes two copies' locale facet
# ids and crashes formatting a number (TORCH_CHECK(c, "got ", n)). --no-undefined: a symbol that
# no source or library defines fails the link, which names it, rather than the load of a
# published build (the library needs nothing from Python: C++ programs link it too); -ldl then,
# for dlsym, which glibc before 2.34 keeps in libdl (an empty stub from 2.34 on).
LD_FLAGS = ("-fopenmp", "-l:libstdc++.so.6", "-Wl,--no-undefined", "-ldl")
# The defines are torch's own for CUDA extensions: c10's half types, not CUDA's operators on them.
NVCC_FLAGS = ("-O3", "--expt-relaxed-constexpr", "-D__CUDA_NO_HALF_OPERATORS__", "-D__CUDA_NO_HALF_CONVERSIONS__",
              "-D__CUDA_NO_BFLOAT16_CONVERSIONS__", "-D__CUDA_NO_HALF2_OPERATORS__", "-Xcompiler", "-fPIC")


def is_cuda_source(path: Path) -> bool:
    """Convention of src/: ``*.cu`` files and ``*_cuda.cpp`` files belong to the CUDA build."""
    return path.suffix == ".cu" or path.stem.endswith("_cuda")


def gencode_flags(archs: tuple[str, ...]) -> list[str]:
    flags = []
    for arch in archs:
        number = arch.replace("+PTX", "").replace(".", "")
        flags.append(f"-gencode=arch=compute_{number},code=sm_{number}")
        if arch.endswith("+PTX"):
            flags.append(f"-gencode=arch=compute_{number},code=compute_{number}")
    return flags


@dataclass(frozen=True)
class BuildSpec:
    """Everything that determines the built library."""

    namespace: str  # the operator namespace the library registers (src/namespace.h)
    cuda_archs: tuple[str, ...]
    src: Path

    @classmethod
    def current(cls, namespace: str, archs: tuple[str, ...] | None = None, src: Path | None = None) -> BuildSpec:
        """This machine's build of `src` (default: the package's sources); BuildError if `src`
        has no C++ sources."""
        return cls(namespace, env.cuda_archs() if archs is None else archs, env.source_dir(src))

    def files(self) -> list[Path]:
        """Every source and header in `src`, which the key covers: regular files, not hidden ones
        (an editor's lock, `.#ops.cpp`, is a dangling link; its backup, a hidden copy)."""
        return sorted(p for p in self.src.iterdir()
                      if p.suffix in SOURCE_SUFFIXES + HEADER_SUFFIXES and not p.name.startswith(".") and p.is_file())

    def sources(self) -> list[Path]:
        """The files to compile: the C++ ones, and for a CUDA build the CUDA ones."""
        return [p for p in self.files() if p.suffix in SOURCE_SUFFIXES and (self.cuda_archs or not is_cuda_source(p))]

    def cxx_flags(self) -> list[str]:
        defines = ["-DLLTM_JIT_WITH_CUDA"] if self.cuda_archs else []
        return [*CXX_FLAGS, f"-std={env.cpp_standard()}", *self._abi(), *defines]

    def nvcc_flags(self) -> list[str]:
        return [*NVCC_FLAGS, f"-std={env.cpp_standard()}", *self._abi(), *gencode_flags(self.cuda_archs)]

    @staticmethod
    def _abi() -> list[str]:
        return [f"-D_GLIBCXX_USE_CXX11_ABI={int(torch._C._GLIBCXX_USE_CXX11_ABI)}"]

    def contents(self) -> list[tuple[str, bytes]]:
        """(name, content) of each of `files`, read once."""
        return [(path.name, path.read_bytes()) for path in self.files()]

    def key(self, contents: list[tuple[str, bytes]] | None = None) -> str:
        """The key of `contents` (default: the files in `src` now) built by this spec."""
        digest = hashlib.sha256()
        for name, content in self.contents() if contents is None else contents:
            digest.update(name.encode() + b"\0" + content + b"\0")
        digest.update(json.dumps({**self.environment(), "namespace": self.namespace}, sort_keys=True).encode())
        return digest.hexdigest()[:24]

    def environment(self) -> dict:
        """The inputs of the key besides the sources and the namespace: what the compiled objects
        depend on (also written to the manifest and shown by `info`)."""
        return {
            "cache_format": CACHE_FORMAT,
            "cxx_flags": self.cxx_flags(),
            "cxx_file_flags": CXX_FILE_FLAGS,
            "ld_flags": LD_FLAGS,
            "nvcc_flags": self.nvcc_flags() if self.cuda_archs else None,
            "cuda_archs": list(self.cuda_archs),
            # The settings naming the compilers (not their resolved files, so that a library built
            # ahead of time still loads where no compiler is installed).
            "cxx": env.cxx(),
            "cuda_home": (os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")) if self.cuda_archs else None,
            "torch": torch.__version__,
            "torch_git": torch.version.git_version,
            "torch_cuda": torch.version.cuda,
            "cxx11_abi": bool(torch._C._GLIBCXX_USE_CXX11_ABI),
            "python": sys.implementation.cache_tag,
            "machine": os.uname().machine,
        }
