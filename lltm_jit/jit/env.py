"""Where things are: the sources, the cache directory, the toolchain, the GPUs to build for, and
the environment variables that choose them. Reads the machine; builds nothing."""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import re
import shlex
import shutil
from pathlib import Path

import torch

from .errors import BuildError

PACKAGE_DIR = Path(__file__).resolve().parent.parent  # lltm_jit/


def env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def env_off(name: str) -> bool:
    """A switch set to off (unset is neither on nor off)."""
    return os.environ.get(name, "").strip().lower() in ("0", "false", "no", "off")


def _has_sources(folder: Path) -> bool:
    """Whether `folder` is a folder with a C++ source (not a hidden file: an editor's)."""
    return any(folder.glob("[!.]*.cpp"))


def source_dir(folder: Path | None = None) -> Path:
    """The C++/CUDA sources: `folder`, else ``lltm_jit/csrc`` in an installed wheel, ``src/`` in a
    checkout. BuildError if `folder` has no C++ sources: a build of none would register no
    operators."""
    if folder is not None:
        folder = Path(folder)
        if not _has_sources(folder):
            reason = ("it does not exist" if not folder.exists() else "it is not a folder" if not folder.is_dir()
                      else "it has no .cpp file")
            raise BuildError(f"lltm_jit: no C++ sources in {folder}: {reason}")
        return folder
    for candidate in (PACKAGE_DIR / "csrc", PACKAGE_DIR.parent / "src"):
        if _has_sources(candidate):
            return candidate
    raise BuildError(
        f"lltm_jit: the C++ sources were not found in {PACKAGE_DIR / 'csrc'} "
        f"or {PACKAGE_DIR.parent / 'src'}; reinstall the package"
    )


@functools.cache
def _absolute(path: str) -> Path:
    """`path` from the current directory of its first use, so that a later chdir keeps the cache."""
    return Path(os.path.abspath(os.path.expanduser(path)))


def cache_root() -> Path:
    """``$LLTM_JIT_CACHE_DIR``, else ``$XDG_CACHE_HOME/lltm_jit``, else ``~/.cache/lltm_jit``.

    A relative path is taken from the current directory when the process first uses it.
    """
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache")
    return _absolute(os.environ.get("LLTM_JIT_CACHE_DIR") or os.path.join(xdg, "lltm_jit"))


# ---------------------------------------------------------------------------------------------
# GPU architectures


def parse_arch_list(text: str) -> tuple[str, ...]:
    """``"8.0;9.0+PTX"`` (TORCH_CUDA_ARCH_LIST's syntax) -> ("8.0", "9.0+PTX")."""
    archs = [a for a in re.split(r"[;,\s]+", text.strip()) if a]
    for arch in archs:
        if not re.fullmatch(r"\d+\.\d+[af]?(\+PTX)?", arch):
            raise BuildError(
                f"lltm_jit: invalid CUDA architecture {arch!r} in {text!r}; "
                "expected entries like 8.0, 9.0 or 9.0+PTX"
            )
    return tuple(sorted(set(archs)))


def _nvml_gpu_archs() -> tuple[str, ...]:
    """Compute capabilities of this machine's GPUs, read through NVML.

    NVML does not initialise CUDA, so asking it leaves the process safe to fork (data-loader
    workers); torch.cuda.get_device_capability would not.
    """
    try:
        nvml = ctypes.CDLL("libnvidia-ml.so.1")
    except OSError:
        return ()
    if nvml.nvmlInit_v2() != 0:
        return ()
    try:
        count = ctypes.c_uint()
        if nvml.nvmlDeviceGetCount_v2(ctypes.byref(count)) != 0:
            return ()
        archs = set()
        for index in range(count.value):
            handle = ctypes.c_void_p()
            major, minor = ctypes.c_int(), ctypes.c_int()
            if nvml.nvmlDeviceGetHandleByIndex_v2(index, ctypes.byref(handle)) == 0 and (
                nvml.nvmlDeviceGetCudaComputeCapability(
                    handle, ctypes.byref(major), ctypes.byref(minor)
                )
                == 0
            ):
                archs.add(f"{major.value}.{minor.value}")
        return tuple(sorted(archs))
    finally:
        nvml.nvmlShutdown()


def cuda_archs() -> tuple[str, ...]:
    """The GPU architectures to build for; empty means a CPU-only build.

    CPU-only when torch has no CUDA, ``LLTM_JIT_CUDA=0``, or no GPU is found (and
    ``TORCH_CUDA_ARCH_LIST`` is unset). Otherwise ``TORCH_CUDA_ARCH_LIST`` if set, else the
    architectures of the machine's GPUs as NVML lists them (all of them: NVML does not apply
    CUDA_VISIBLE_DEVICES): exact machine code for them, no PTX to JIT at start. Hopper's (9.0)
    is built as 9.0a, whose code alone has wgmma (the streamed forward's product); machine
    code for the GPU at hand loses nothing by it.
    """
    if torch.version.cuda is None or env_off("LLTM_JIT_CUDA"):
        return ()
    if os.environ.get("TORCH_CUDA_ARCH_LIST", "").strip():
        return parse_arch_list(os.environ["TORCH_CUDA_ARCH_LIST"])
    if os.environ.get("CUDA_VISIBLE_DEVICES", None) in ("", "-1"):
        return ()
    archs = _nvml_gpu_archs()
    if not archs and torch.cuda.is_initialized():  # no NVML; asking torch now costs nothing more
        archs = tuple(sorted({
            "{}.{}".format(*torch.cuda.get_device_capability(i))
            for i in range(torch.cuda.device_count())
        }))
    return tuple("9.0a" if arch == "9.0" else arch for arch in archs)


# ---------------------------------------------------------------------------------------------
# The toolchain


def cuda_home() -> Path | None:
    """The CUDA toolkit: $CUDA_HOME (or $CUDA_PATH) when set, else the one holding the nvcc on
    PATH, else /usr/local/cuda.

    Unlike torch's own guess, a candidate counts only if it has both bin/nvcc and the headers,
    so that an nvcc wrapper script in /usr/local/bin does not make /usr/local the toolkit.
    """
    explicit = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    if explicit:
        candidates = [Path(explicit)]
    else:
        on_path = shutil.which("nvcc")
        candidates = [Path(on_path).parent.parent, Path(on_path).resolve().parent.parent] if on_path else []
        candidates.append(Path("/usr/local/cuda"))
    for home in candidates:
        if (home / "bin" / "nvcc").is_file() and (home / "include" / "cuda_runtime.h").is_file():
            return home
    return None


def _cuda_search_note() -> str:
    for name in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(name):
            return f"{name}={os.environ[name]} has no bin/nvcc or include/cuda_runtime.h"
    return "looked next to the nvcc on PATH and in /usr/local/cuda"


def cxx() -> str:
    """The C++ compiler's command: $CXX, else ``c++``."""
    return os.environ.get("CXX", "c++")


def cxx_command() -> list[str] | None:
    """cxx() as the words of a command, its program found on PATH: the compiler's path (spaces
    and all), else words the shell would split (a wrapper or options, as ``ccache g++``); None
    where no program is found."""
    whole = shutil.which(cxx())
    if whole is not None:
        return [whole]
    try:
        words = shlex.split(cxx())
    except ValueError as error:
        raise BuildError(f"lltm_jit: cannot build: CXX={cxx()!r} is not a command line ({error})") from None
    program = shutil.which(words[0]) if words else None
    return None if program is None else [program, *words[1:]]


def ninja_path() -> str | None:
    """The ninja to run: the one on PATH, else the `ninja` wheel's, whose binary sits in the
    environment's bin/, which is not on PATH when a virtual environment's python is run without
    activating it."""
    found = shutil.which("ninja")
    if found is None:
        with contextlib.suppress(ImportError):
            import ninja

            found = shutil.which("ninja", path=ninja.BIN_DIR)
    return found


def check_tools(archs: tuple[str, ...]) -> dict[str, str]:
    """The tools a build for `archs` needs: {"cxx" (a command line), "ninja", "cuda_home" (CUDA
    builds)}, each a path; BuildError naming the first one that cannot be found."""
    if archs and torch.version.cuda is None:
        raise BuildError(
            f"lltm_jit: cannot build the CUDA kernels (sm {', '.join(archs)}): this torch "
            f"({torch.__version__}) is built without CUDA. Install a CUDA build of torch, or build "
            "the CPU kernels only (`python -m lltm_jit build --cpu-only`)."
        )
    command = cxx_command()
    tools = {"cxx": shlex.join(command) if command else None, "ninja": ninja_path()}
    if tools["cxx"] is None:
        raise BuildError(
            f"lltm_jit: cannot build: the C++ compiler {cxx()!r} was not found on PATH. "
            "Install one (e.g. `apt-get install g++`) or point CXX at it."
        )
    if tools["ninja"] is None:
        raise BuildError("lltm_jit: cannot build: ninja was not found. `pip install ninja`.")
    if archs:
        home = cuda_home()
        if home is None:
            raise BuildError(
                f"lltm_jit: cannot build the CUDA kernels: torch has CUDA {torch.version.cuda} and "
                f"CUDA architectures {', '.join(archs)} were requested or detected, but nvcc "
                f"with its headers was not found ({_cuda_search_note()}). "
                f"Install the CUDA toolkit {torch.version.cuda.split('.')[0]}.x, or set "
                "LLTM_JIT_CUDA=0 to build the CPU kernels only."
            )
        tools["cuda_home"] = str(home)
    return tools


def max_jobs() -> str:
    """How many compiles run at once: $MAX_JOBS (torch's variable), else this process's CPUs."""
    given = os.environ.get("MAX_JOBS", "").strip()
    if not given:
        return str(len(os.sched_getaffinity(0)))
    if not given.isdigit() or int(given) < 1:
        raise BuildError(f"lltm_jit: MAX_JOBS must be a positive number of compiles to run at once, got {given!r}")
    return given


def torch_paths() -> tuple[Path, Path]:
    """torch's C++ headers and libraries: (include, lib) in its package folder."""
    root = Path(torch.__file__).resolve().parent
    return root / "include", root / "lib"


@functools.cache
def cpp_standard() -> str:
    """The C++ standard torch's own extension builder uses for this torch (its headers need it):
    read from torch/utils/cpp_extension.py's text, which is quicker than importing it."""
    text = (Path(torch.__file__).resolve().parent / "utils" / "cpp_extension.py").read_text(errors="replace")
    versions = [int(v) for v in re.findall(r"-std=c\+\+(\d+)", text)]
    return f"c++{max(versions) if versions else 17}"
