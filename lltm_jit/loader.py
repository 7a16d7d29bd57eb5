"""The JIT loader: build the bundled C++/CUDA sources once, cache the library, load it.

The key of a build is a hash of everything that changes the binary: the sources' contents, the
compiler flags, torch's version and CUDA version, the Python ABI and the target GPU architectures.
So an edit in ``src/`` or a torch upgrade gives a new key and a rebuild, and an unchanged setup
loads the cached library without running any tool. `Cache` holds the builds, one folder per key.

A build happens under the key's file lock, with a check of the cache before and after taking it.
It goes to a staging folder that is renamed into place when complete, so no process ever sees a
half-built library. ninja runs under `_ninja_guard`, which stops it and its compilers when the
importing process dies or is interrupted.

This module knows how to build and load a library, not what is in it.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
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
# -l:libstdc++.so.6, ahead of the torch libraries cpp_extension appends: torch wheels built with
# gcc-toolset carry and export pieces of libstdc++ (its static libstdc++_nonshared.a), and with
# them first on the link line (and --as-needed, Ubuntu's default) the library binds its std::
# references to those copies and records no libstdc++.so.6 at all. A std::ostringstream then
# mixes two copies' locale facet ids and crashes formatting a number (TORCH_CHECK(c, "got ", n)).
LD_FLAGS = ("-fopenmp", "-l:libstdc++.so.6")
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
    def current(cls, namespace: str, archs: tuple[str, ...] | None = None, src: Path | None = None) -> BuildSpec:
        """This machine's build of `src` (default: the package's sources)."""
        return cls(namespace, cuda_archs() if archs is None else archs, source_dir() if src is None else Path(src))

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


class CacheError(BuildError):
    """The cache directory cannot be used: it is not a directory, or not writable."""


class _Busy(Exception):
    """Another process holds the lock (`Cache.locked` with wait=False)."""


class _Damaged(Exception):
    pass


_KEY = r"[0-9a-f]{24}"
_LEFTOVER = re.compile(rf"({_KEY})\.(?:tmp|trash)-\d+")
_CACHED = re.compile(rf"({_KEY})(?:\.lock|\.(?:tmp|trash)-\d+)?")  # anything of a key's


@functools.cache
def _absolute(path: str) -> Path:
    """`path` from the current directory of its first use, so that a later chdir keeps the cache."""
    return Path(os.path.abspath(os.path.expanduser(path)))


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class Cache:
    """The build cache: a directory with one build per key and what guards them.

    ``<key>/``              a published build: the library and ``manifest.json``
    ``<key>.lock``          held by whoever builds ``<key>``; an OS lock, which dies with its holder
    ``<key>.tmp-<pid>/``    a build in progress, renamed to ``<key>/`` when complete
    ``<key>.trash-<pid>/``  a build being removed, renamed first so nobody sees it half-deleted
    ``logs/``               the full logs of failed builds

    Only the holder of ``<key>.lock`` creates or removes ``<key>``'s folders, so a
    ``<key>.tmp-*`` or ``<key>.trash-*`` folder whose lock is free was left by a process that died.
    """

    def __init__(self, root: Path):
        self.root = Path(root)

    @classmethod
    def default(cls) -> Cache:
        """``$LLTM_JIT_CACHE_DIR``, else ``$XDG_CACHE_HOME/lltm_jit``, else ``~/.cache/lltm_jit``.

        A relative path is taken from the current directory when the process first uses it.
        """
        xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache")
        return cls(_absolute(os.environ.get("LLTM_JIT_CACHE_DIR") or os.path.join(xdg, "lltm_jit")))

    def entry(self, key: str) -> Path:
        return self.root / key

    def library(self, key: str) -> Path | None:
        """The verified library of `key`'s build; None if there is none; _Damaged if it is broken."""
        entry = self.entry(key)
        if not entry.exists():
            return None
        try:
            meta = json.loads((entry / "manifest.json").read_text())
            library = entry / meta["library"]
            if library.stat().st_size != meta["size"] or _sha256(library) != meta["sha256"]:
                raise _Damaged(f"{library} does not match its checksum")
        except (OSError, ValueError, KeyError) as error:
            raise _Damaged(str(error)) from error
        return library

    def builds(self) -> list[dict]:
        """The manifests of the published builds, each with its ``directory``."""
        builds = []
        with contextlib.suppress(OSError):
            for manifest in sorted(self.root.glob("*/manifest.json")):
                with contextlib.suppress(OSError, ValueError):
                    builds.append({"directory": str(manifest.parent), **json.loads(manifest.read_text())})
        return builds

    @contextlib.contextmanager
    def locked(self, key: str, wait: bool = True):
        """Hold `key`'s lock. If another process holds it, wait (saying so) or, with wait=False,
        raise _Busy."""
        import filelock  # a cached load never locks, and filelock is slow to import

        lock = filelock.FileLock(self.root / f"{key}.lock", thread_local=False)
        with self._writing():
            self.root.mkdir(parents=True, exist_ok=True)
            try:
                lock.acquire(timeout=0)
            except filelock.Timeout:
                if not wait:
                    raise _Busy(key) from None
                _status(f"waiting for another process that is building lltm_jit {key} (lock {lock.lock_file})")
                lock.acquire()
        try:
            yield
        finally:
            lock.release()

    def staging(self, key: str) -> Path:
        """A new, empty folder to build `key` in. The caller holds `key`'s lock."""
        with self._writing():
            for path in self.leftovers(key):  # of a dead builder: we hold the lock
                shutil.rmtree(path)
            path = self.root / f"{key}.tmp-{os.getpid()}"
            path.mkdir()
        return path

    def publish(self, staging: Path, key: str, manifest: dict) -> Path:
        """Give `staging` its manifest and rename it into place as `key`'s build."""
        with self._writing():
            (staging / "manifest.json").write_text(json.dumps(manifest, indent=1))
            os.rename(staging, self.entry(key))
        return self.entry(key)

    def discard(self, key: str) -> None:
        """Remove `key`'s build, renamed first so that nobody sees it half-deleted. The caller
        holds `key`'s lock."""
        entry = self.entry(key)
        with self._writing():
            if entry.exists():
                trash = entry.with_name(f"{key}.trash-{os.getpid()}")
                os.rename(entry, trash)
                shutil.rmtree(trash, ignore_errors=True)

    def save_log(self, key: str, text: str) -> Path:
        """Keep the full log of a failed build of `key`; returns its path."""
        with self._writing():
            logs = self.root / "logs"
            logs.mkdir(exist_ok=True)
            path = logs / f"{key}-{time.strftime('%Y%m%d-%H%M%S')}.log"
            path.write_text(text)
        return path

    def sweep(self) -> None:
        """Remove the folders that dead processes left (a key's staging or trash folders whose
        lock is free). Quiet: a cache it cannot write is left as it is."""
        for key in sorted({_LEFTOVER.fullmatch(path.name)[1] for path in self.leftovers()}):
            with contextlib.suppress(_Busy, CacheError), self.locked(key, wait=False):
                for path in self.leftovers(key):
                    shutil.rmtree(path, ignore_errors=True)

    def clean(self) -> tuple[list[Path], list[str]]:
        """Remove every build, leftover folder, lock file and log, except those of the keys being
        built now. Returns (the paths removed, the keys skipped)."""
        removed, busy = [], []
        with self._writing():
            if not self.root.exists():
                return removed, busy
            names = os.listdir(self.root)
        for key in sorted({match[1] for match in map(_CACHED.fullmatch, names) if match}):
            try:
                with self.locked(key, wait=False), self._writing():
                    if self.entry(key).exists():
                        self.discard(key)
                        removed.append(self.entry(key))
                    for path in self.leftovers(key):
                        shutil.rmtree(path)
                        removed.append(path)
                    # Removed while held, and nothing of `key` is touched after: a process that
                    # opened the old file before sees, once it gets the lock, that the file is
                    # gone (filelock checks) and locks the new one.
                    lock = self.root / f"{key}.lock"
                    lock.unlink()
                    removed.append(lock)
            except _Busy:
                busy.append(key)
        with self._writing():
            if (self.root / "logs").exists():
                shutil.rmtree(self.root / "logs")
                removed.append(self.root / "logs")
        return removed, busy

    def problem(self) -> str | None:
        """Why no build can be added to this cache now; None if one can."""
        path = self.root
        while not path.exists() and path != path.parent:  # a path under a file does not exist
            path = path.parent
        name = "it" if path == self.root else str(path)
        if not path.is_dir():
            return f"{name} is not a directory"
        if not os.access(path, os.W_OK | os.X_OK):
            read_only = os.statvfs(path).f_flag & os.ST_RDONLY
            return f"{name} is {'on a read-only file system' if read_only else 'not writable'}"
        return None

    def leftovers(self, key: str = "*") -> list[Path]:
        """The staging and trash folders of `key` (default: of every key), in progress or left."""
        return sorted(p for p in self.root.glob(f"{key}.*-*") if _LEFTOVER.fullmatch(p.name))

    @contextlib.contextmanager
    def _writing(self):
        """OSErrors as one CacheError, which names the cache and what to do."""
        try:
            yield
        except OSError as error:
            reason = self.problem() or f"{error.strerror or error} ({error.filename})"
            raise CacheError(
                f"lltm_jit: cannot use the cache directory {self.root}: {reason}. "
                "Set LLTM_JIT_CACHE_DIR to a writable directory."
            ) from None


@dataclass(frozen=True)
class Build:
    """A library in the cache, loaded into this process."""

    key: str
    namespace: str
    cuda_archs: tuple[str, ...]
    library: Path
    built_now: bool  # False: loaded from the cache


def load(spec: BuildSpec) -> Build:
    """Load the library for `spec`, building it first if the cache has no valid one."""
    key = spec.key()
    cache = Cache.default()
    cache.sweep()
    try:
        library = cache.library(key)
    except _Damaged:
        library = None
    if library is None:
        with cache.locked(key):
            try:
                library = cache.library(key)
            except _Damaged as damage:
                warnings.warn(
                    f"lltm_jit: the cached build {cache.entry(key)} is damaged ({damage}); rebuilding",
                    RuntimeWarning,
                    stacklevel=3,
                )
                cache.discard(key)
            if library is None:
                return _build(spec, cache, key)
    try:
        torch.ops.load_library(str(library))
    except OSError as error:  # built elsewhere, say, for a newer libstdc++: not loadable here
        raise BuildError(f"lltm_jit: the cached build {library} cannot be loaded ({error}); "
                         "remove it with `python -m lltm_jit clean`") from None
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
    """The environment the build needs (PATH, CUDA_HOME); BuildError naming the first thing the
    build needs and cannot find."""
    if spec.cuda_archs and torch.version.cuda is None:
        raise BuildError(
            f"lltm_jit: cannot build the CUDA kernels (sm {', '.join(spec.cuda_archs)}): this torch "
            f"({torch.__version__}) is built without CUDA. Install a CUDA build of torch, or build "
            "the CPU kernels only (`python -m lltm_jit build --cpu-only`)."
        )
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


def _guarded_ninja(build_dir: Path, env: dict[str, str]) -> Path:
    """A folder whose ``ninja`` runs the real one under _ninja_guard, to put first on PATH:
    torch.utils.cpp_extension runs the ``ninja`` it finds there."""
    import shlex  # only a build needs it: not imported by a cached load

    ninja = shutil.which("ninja", path=env.get("PATH"))
    folder = build_dir / ".guard"
    folder.mkdir()
    script = folder / "ninja"
    guard = [sys.executable, "-I", "-S", str(PACKAGE_DIR / "_ninja_guard.py"), str(os.getpid()), str(build_dir), ninja]
    script.write_text(f'#!/bin/sh\nexec {shlex.join(guard)} "$@"\n')
    script.chmod(0o755)
    return folder


def _compile(spec: BuildSpec, key: str, build_dir: Path, env: dict[str, str]) -> Path:
    """Compile and link `spec` in `build_dir` with torch's cpp_extension, which also loads the
    library into this process; returns the library."""
    name = f"lltm_jit_{key}"
    path = os.pathsep.join([str(_guarded_ninja(build_dir, env)), env.get("PATH", os.environ.get("PATH", ""))])
    with _environment({**env, "PATH": path}):
        from torch.utils import cpp_extension  # slow to import; only a build needs it

        if spec.cuda_archs:  # it reads CUDA_HOME once, when first imported
            cpp_extension.CUDA_HOME = env["CUDA_HOME"]
        cpp_extension.load(
            name=name,
            sources=[str(p) for p in spec.sources()],
            extra_cflags=spec.cxx_flags(),
            extra_cuda_cflags=spec.nvcc_flags(),
            extra_ldflags=list(LD_FLAGS),
            build_directory=str(build_dir),
            verbose=env_flag("LLTM_JIT_VERBOSE"),
            with_cuda=bool(spec.cuda_archs),
            is_python_module=False,
        )
    return build_dir / f"{name}.so"


def _stop(build_dir: Path, timeout: float = 10.0) -> str:
    """Wait (up to `timeout` seconds) until no process of the build in `build_dir` runs, remove
    the folder, and return the build's output."""
    import fcntl  # only a build needs it: not imported by a cached load

    try:
        running = os.open(build_dir / ".running", os.O_RDONLY)  # see _ninja_guard
    except OSError:
        pass  # ninja never ran
    else:
        deadline = time.monotonic() + timeout
        try:
            while True:
                try:
                    fcntl.flock(running, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        break
                    time.sleep(0.01)
        finally:
            os.close(running)
    try:
        output = (build_dir / "build.log").read_text(errors="replace")
    except OSError:
        output = ""
    shutil.rmtree(build_dir, ignore_errors=True)
    return output


def _compile_times(build_dir: Path) -> dict[str, list[float]]:
    """{output file: [start, end] in seconds from the build's start}, from ninja's log."""
    times = {}
    with contextlib.suppress(OSError):
        for row in (build_dir / ".ninja_log").read_text().splitlines():
            fields = row.split("\t")
            if not row.startswith("#") and len(fields) >= 4:
                times[fields[3]] = [int(fields[0]) / 1000, int(fields[1]) / 1000]
    return times


_ERROR_ROW = re.compile(r"(^|[\s:])(fatal )?error( [A-Z]?\d+)?:|undefined reference")
_NINJA_ROW = re.compile(r"\[\d+/\d+\] |ninja: |FAILED: ")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")


def _describe_failure(log: str, spec: BuildSpec, lines: int = 8) -> tuple[str, str]:
    """(the source that failed, an excerpt: ninja's FAILED row and the compiler's first error
    rows) from a build's output."""
    rows = log.splitlines()
    failed = next((i for i, row in enumerate(rows) if row.startswith("FAILED: ")), None)
    if failed is None:  # no compiler failed: ninja itself, or loading the library
        head, output = [], [row for row in rows if row.strip() and not _NINJA_ROW.match(row)]
    else:  # ninja prints FAILED: <outputs>, the command, then the compiler's output
        end = next((i for i in range(failed + 2, len(rows)) if _NINJA_ROW.match(rows[i])), len(rows))
        head, output = [rows[failed]], rows[failed + 2 : end]
    first = next((i for i, row in enumerate(output) if _ERROR_ROW.search(row)), None)
    excerpt = "\n".join(head + (output[first : first + lines] if first is not None else output[-lines:]))
    # The source named on the first error row; else the one whose object ninja reports as FAILED
    # (cpp_extension names the objects <stem>.o, and <stem>.cuda.o for CUDA files).
    for row in ([output[first]] if first is not None else []) + head:
        for source in spec.sources():
            obj = f"{source.stem}.cuda.o" if source.suffix == ".cu" else f"{source.stem}.o"
            if re.search(rf"(^|[\s/])({re.escape(source.name)}|{re.escape(obj)})\b", row):
                return str(source), excerpt
    return "the extension", excerpt


def _failure(spec: BuildSpec, cache: Cache, key: str, output: str) -> BuildError:
    """The BuildError for a failed build: the failing source, an excerpt, the saved full log."""
    output = _ANSI.sub("", output)
    failed, excerpt = _describe_failure(output, spec)
    try:
        where = f"Full build log: {cache.save_log(key, output)}"
    except CacheError as error:
        where = f"The full build log could not be saved: {error}"
    return BuildError(f"lltm_jit: building {failed} failed:\n{excerpt}\n{where}")


def _build(spec: BuildSpec, cache: Cache, key: str) -> Build:
    """Compile `spec` in a staging folder, then publish it as `key`'s build. The caller holds
    `key`'s lock."""
    env = check_tools(spec)
    staging = cache.staging(key)
    what = "C++" + (f" and CUDA (sm {', '.join(spec.cuda_archs)})" if spec.cuda_archs else "")
    _status(f"compiling the {what} kernels for torch {torch.__version__}; this happens once "
            f"per source change and torch version (cache: {cache.root})")
    start = time.perf_counter()
    try:
        library = _compile(spec, key, staging, env)
    except BaseException as error:
        output = _stop(staging)
        if not isinstance(error, (RuntimeError, OSError, ImportError)):
            raise  # a KeyboardInterrupt above all: the build is stopped and its folder gone
        if not isinstance(error.__cause__, subprocess.CalledProcessError):  # else it repeats the output
            output += "".join(f"\n{e}" for e in (error, error.__cause__) if e is not None)
        raise _failure(spec, cache, key, output) from None
    seconds = time.perf_counter() - start
    manifest = {
        "key": key,
        "library": library.name,
        "size": library.stat().st_size,
        "sha256": _sha256(library),
        "build_seconds": round(seconds, 2),
        "compile_seconds": _compile_times(staging),
        "built_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "sources": [p.name for p in spec.sources()],
        **spec.environment(),
    }
    for scratch in [*staging.glob("*.o"), staging / "build.log", staging / ".running"]:
        scratch.unlink(missing_ok=True)
    shutil.rmtree(staging / ".guard")
    if spec.key() != key:  # src/ was edited while it compiled: the binary matches neither key
        warnings.warn("lltm_jit: the sources changed during the build; it is loaded but not cached",
                      RuntimeWarning, stacklevel=4)
        return Build(key, spec.namespace, spec.cuda_archs, library, built_now=True)
    entry = cache.publish(staging, key, manifest)
    _status(f"built in {seconds:.1f} s")
    return Build(key, spec.namespace, spec.cuda_archs, entry / library.name, built_now=True)
