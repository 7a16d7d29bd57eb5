"""The JIT loader: build the bundled C++/CUDA sources once, cache the library, load it.

The cache holds one directory per build key, ``<cache>/<key>/``, with the library and a
``manifest.json`` (its checksum and what it was built for). The key is a hash of everything that
changes the binary: the sources' contents, the compiler flags, torch's version and CUDA version,
the Python ABI and the target GPU architectures. So an edit in ``src/`` or a torch upgrade gives a
new key and a rebuild, and an unchanged setup loads the cached library without running any tool.

A build happens under an OS file lock (``fcntl.flock``, released by the kernel when its holder
dies, so a killed build never blocks the next one), with a check of the cache before and after
taking it; it goes to a temporary directory that is renamed into place when complete, so no
process ever sees a half-built library.

This module knows how to build and load a library, not what is in it.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import hashlib
import json
import os
import re
import shutil
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import torch

PACKAGE_DIR = Path(__file__).resolve().parent
# Bump when the build recipe or the cache layout changes, so that old entries are not reused.
CACHE_FORMAT = 1
# -fno-trapping-math: lets GCC turn the selects in the CPU kernels' loops into vector blends
# (nothing here enables floating-point traps; NaN and inf behave as before). -fopenmp: without it
# at::parallel_for, inlined from ATen's headers, runs serially.
CXX_FLAGS = ("-O3", "-fno-trapping-math", "-fopenmp")
LD_FLAGS = ("-fopenmp",)
NVCC_FLAGS = ("-O3",)


class BuildError(RuntimeError):
    """The extension could not be built (a tool is missing or the compiler failed)."""


def _status(message: str) -> None:
    print(f"lltm_jit: {message}", file=sys.stderr, flush=True)


def env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def source_dir() -> Path:
    """The C++/CUDA sources: ``lltm_jit/csrc`` in an installed wheel, ``src/`` in a checkout."""
    for candidate in (PACKAGE_DIR / "csrc", PACKAGE_DIR.parent / "src"):
        if any(candidate.glob("*.cpp")):
            return candidate
    raise BuildError(
        f"lltm_jit: the C++ sources were not found in {PACKAGE_DIR / 'csrc'} "
        f"or {PACKAGE_DIR.parent / 'src'}; reinstall the package"
    )


def cache_root() -> Path:
    """``$LLTM_JIT_CACHE_DIR``, else ``$XDG_CACHE_HOME/lltm_jit``, else ``~/.cache/lltm_jit``."""
    if os.environ.get("LLTM_JIT_CACHE_DIR"):
        return Path(os.environ["LLTM_JIT_CACHE_DIR"]).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(xdg) / "lltm_jit"


# ---------------------------------------------------------------------------------------------
# What to build


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
    CUDA_VISIBLE_DEVICES): exact machine code for them, no PTX to JIT at start.
    """
    if torch.version.cuda is None or os.environ.get("LLTM_JIT_CUDA", "").strip() == "0":
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
    return archs


def _gencode_flags(archs: tuple[str, ...]) -> list[str]:
    flags = []
    for arch in archs:
        number = arch.replace("+PTX", "").replace(".", "")
        flags.append(f"-gencode=arch=compute_{number},code=sm_{number}")
        if arch.endswith("+PTX"):
            flags.append(f"-gencode=arch=compute_{number},code=compute_{number}")
    return flags


def _is_cuda_source(path: Path) -> bool:
    """Convention of src/: ``*.cu`` files and ``*_cuda.cpp`` files belong to the CUDA build."""
    return path.suffix == ".cu" or path.stem.endswith("_cuda")


@dataclass(frozen=True)
class BuildSpec:
    """Everything that determines the built library."""

    namespace: str  # the C++ operator namespace, passed as -DLLTM_JIT_NAMESPACE
    cuda_archs: tuple[str, ...]
    src: Path

    @classmethod
    def current(cls, namespace: str, archs: tuple[str, ...] | None = None) -> BuildSpec:
        return cls(namespace, cuda_archs() if archs is None else archs, source_dir())

    def sources(self) -> list[Path]:
        files = sorted(p for p in self.src.iterdir() if p.suffix in (".cpp", ".cu"))
        return [p for p in files if self.cuda_archs or not _is_cuda_source(p)]

    def cxx_flags(self) -> list[str]:
        return [*CXX_FLAGS, f"-DLLTM_JIT_NAMESPACE={self.namespace}"]

    def nvcc_flags(self) -> list[str]:
        return [*NVCC_FLAGS, *_gencode_flags(self.cuda_archs)]

    def key(self) -> str:
        digest = hashlib.sha256()
        for path in sorted(self.src.iterdir()):
            if path.suffix in (".cpp", ".cu", ".h", ".cuh"):
                digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
        digest.update(json.dumps(self.environment(), sort_keys=True).encode())
        return digest.hexdigest()[:24]

    def environment(self) -> dict:
        """The non-source inputs of the key (also written to the manifest and shown by `info`)."""
        return {
            "cache_format": CACHE_FORMAT,
            "namespace": self.namespace,
            "cxx_flags": self.cxx_flags(),
            "ld_flags": LD_FLAGS,
            "nvcc_flags": self.nvcc_flags() if self.cuda_archs else None,
            "cuda_archs": list(self.cuda_archs),
            # The settings naming the compilers (not their resolved files, so that a library built
            # ahead of time still loads where no compiler is installed).
            "cxx": os.environ.get("CXX", "c++"),
            "cuda_home": (os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")) if self.cuda_archs else None,
            "torch": torch.__version__,
            "torch_git": torch.version.git_version,
            "torch_cuda": torch.version.cuda,
            "cxx11_abi": bool(torch._C._GLIBCXX_USE_CXX11_ABI),
            "python": sys.implementation.cache_tag,
            "machine": os.uname().machine,
        }


# ---------------------------------------------------------------------------------------------
# The cache


@dataclass(frozen=True)
class Build:
    """A library in the cache, loaded into this process."""

    key: str
    namespace: str
    cuda_archs: tuple[str, ...]
    library: Path
    built_now: bool  # False: loaded from the cache


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class _Damaged(Exception):
    pass


def _cached_library(entry: Path) -> Path | None:
    """The verified library of a cache entry; None if there is none; _Damaged if it is broken."""
    manifest = entry / "manifest.json"
    if not entry.exists():
        return None
    try:
        meta = json.loads(manifest.read_text())
        library = entry / meta["library"]
        if library.stat().st_size != meta["size"] or _sha256(library) != meta["sha256"]:
            raise _Damaged(f"{library} does not match its checksum")
    except (OSError, ValueError, KeyError) as error:
        raise _Damaged(str(error)) from error
    return library


@contextlib.contextmanager
def locked(path: Path, what: str, wait: bool = True):
    """Hold the lock file `path`; if another process holds it, wait (saying so) or, with
    wait=False, raise BlockingIOError."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if not wait:
                raise
            _status(f"waiting for another process that is building {what} (lock {path})")
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def lock_path(key: str) -> Path:
    return cache_root() / f"{key}.lock"


def discard(entry: Path) -> None:
    """Remove a cache entry; renamed first so that nobody sees it half-deleted."""
    if entry.exists():
        trash = entry.with_name(f"{entry.name}.trash-{os.getpid()}")
        os.rename(entry, trash)
        shutil.rmtree(trash, ignore_errors=True)


def load(spec: BuildSpec) -> Build:
    """Load the library for `spec`, building it first if the cache has no valid one."""
    key = spec.key()
    root = cache_root()
    entry = root / key
    try:
        library = _cached_library(entry)
    except _Damaged:
        library = None
    if library is None:
        with locked(lock_path(key), f"lltm_jit {key}"):
            try:
                library = _cached_library(entry)
            except _Damaged as damage:
                warnings.warn(
                    f"lltm_jit: the cached build {entry} is damaged ({damage}); rebuilding",
                    RuntimeWarning,
                    stacklevel=3,
                )
                discard(entry)
            if library is None:
                return _build(spec, key, entry)
    torch.ops.load_library(str(library))
    return Build(key, spec.namespace, spec.cuda_archs, library, built_now=False)


# ---------------------------------------------------------------------------------------------
# Building


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


def check_tools(spec: BuildSpec) -> dict[str, str]:
    """The environment the build needs (PATH, CUDA_HOME); BuildError naming the first tool the
    build needs and cannot find."""
    env = {}
    cxx = os.environ.get("CXX", "c++")
    if shutil.which(cxx) is None:
        raise BuildError(
            f"lltm_jit: cannot build: the C++ compiler {cxx!r} was not found on PATH. "
            "Install one (e.g. `apt-get install g++`) or point CXX at it."
        )
    if shutil.which("ninja") is None:
        # The `ninja` wheel puts its binary in the environment's bin/, which is not on PATH when
        # a virtual environment's python is run without activating it.
        with contextlib.suppress(ImportError):
            import ninja

            env["PATH"] = ninja.BIN_DIR + os.pathsep + os.environ.get("PATH", "")
    if shutil.which("ninja", path=env.get("PATH")) is None:
        raise BuildError("lltm_jit: cannot build: ninja was not found. `pip install ninja`.")
    home = cuda_home() if spec.cuda_archs else None
    if spec.cuda_archs and home is None:
        raise BuildError(
            f"lltm_jit: cannot build the CUDA kernels: torch has CUDA {torch.version.cuda} and "
            f"CUDA architectures {', '.join(spec.cuda_archs)} were requested or detected, but nvcc "
            f"with its headers was not found ({_cuda_search_note()}). "
            f"Install the CUDA toolkit {torch.version.cuda.split('.')[0]}.x, or set "
            "LLTM_JIT_CUDA=0 to build the CPU kernels only."
        )
    if home is not None:
        env["CUDA_HOME"] = str(home)
    # torch.utils.cpp_extension calls torch.cuda.is_available() when imported, which by default
    # asks the CUDA runtime and so forbids CUDA in forked children (data-loader workers); with
    # this variable set, torch asks NVML instead.
    env["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"
    return env


_ERROR_ROW = re.compile(r"(^|[\s:])(fatal )?error( [A-Z]?\d+)?:")


def _describe_failure(log: str, spec: BuildSpec, lines: int = 8) -> tuple[str, str]:
    """(the source that failed, the compiler's first error lines) from a build's output."""
    rows = log.splitlines()
    first = next((i for i, row in enumerate(rows) if _ERROR_ROW.search(row)), None)
    excerpt = "\n".join(rows[first : first + lines] if first is not None else rows[-lines:])
    # The file named on the first error row; else the object ninja reports as FAILED.
    for row in ([rows[first]] if first is not None else []) + [r for r in rows if r.startswith("FAILED: ")]:
        for source in spec.sources():
            if source.name in row or f"FAILED: {source.stem}." in row:
                return str(source), excerpt
    return "the extension", excerpt


@contextlib.contextmanager
def _environment(changes: dict[str, str]):
    """os.environ with `changes` applied, restored afterwards."""
    previous = {name: os.environ.get(name) for name in changes}
    os.environ.update(changes)
    try:
        yield
    finally:
        for name, value in previous.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _build(spec: BuildSpec, key: str, entry: Path) -> Build:
    """Build into a fresh temporary directory, load it, then publish it as `entry`. Holds the lock."""
    env = check_tools(spec)
    root = entry.parent
    for stale in root.glob(f"{key}.*-*"):  # left by a killed build (we hold the key's lock)
        shutil.rmtree(stale, ignore_errors=True)
    tmp = root / f"{key}.tmp-{os.getpid()}"
    tmp.mkdir(parents=True)
    name = f"lltm_jit_{key}"
    what = "C++" + (f" and CUDA (sm {', '.join(spec.cuda_archs)})" if spec.cuda_archs else "")
    _status(f"compiling the {what} kernels for torch {torch.__version__}; this happens once "
            f"per source change and torch version (cache: {root})")
    start = time.perf_counter()
    try:
        with _environment(env):
            from torch.utils import cpp_extension  # slow to import; only a build needs it

            if spec.cuda_archs:  # it reads CUDA_HOME once, when first imported
                cpp_extension.CUDA_HOME = env["CUDA_HOME"]
            cpp_extension.load(
                name=name,
                sources=[str(p) for p in spec.sources()],
                extra_cflags=spec.cxx_flags(),
                extra_cuda_cflags=spec.nvcc_flags(),
                extra_ldflags=list(LD_FLAGS),
                build_directory=str(tmp),
                verbose=env_flag("LLTM_JIT_VERBOSE"),
                with_cuda=bool(spec.cuda_archs),
                is_python_module=False,
            )
    except (RuntimeError, OSError, ImportError) as error:
        log_dir = root / "logs"
        log_dir.mkdir(exist_ok=True)
        log_path = log_dir / f"{key}-{time.strftime('%Y%m%d-%H%M%S')}.log"
        log_path.write_text(str(error))
        shutil.rmtree(tmp, ignore_errors=True)
        failed, excerpt = _describe_failure(str(error), spec)
        raise BuildError(
            f"lltm_jit: building {failed} failed:\n{excerpt}\nFull build log: {log_path}"
        ) from None
    seconds = time.perf_counter() - start
    library = tmp / f"{name}.so"
    for obj in tmp.glob("*.o"):
        obj.unlink()
    manifest = {
        "key": key,
        "library": library.name,
        "size": library.stat().st_size,
        "sha256": _sha256(library),
        "build_seconds": round(seconds, 2),
        "built_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "sources": [p.name for p in spec.sources()],
        **spec.environment(),
    }
    if spec.key() != key:  # src/ was edited while it compiled: the binary matches neither key
        warnings.warn("lltm_jit: the sources changed during the build; it is loaded but not cached",
                      RuntimeWarning, stacklevel=4)
        return Build(key, spec.namespace, spec.cuda_archs, library, built_now=True)
    (tmp / "manifest.json").write_text(json.dumps(manifest, indent=1))
    os.rename(tmp, entry)
    _status(f"built in {seconds:.1f} s")
    return Build(key, spec.namespace, spec.cuda_archs, entry / library.name, built_now=True)


def cached_builds() -> list[dict]:
    """Manifests of the valid builds in the cache (for `python -m lltm_jit info`)."""
    builds = []
    for manifest in sorted(cache_root().glob("*/manifest.json")):
        with contextlib.suppress(OSError, ValueError):
            builds.append({"directory": str(manifest.parent), **json.loads(manifest.read_text())})
    return builds
