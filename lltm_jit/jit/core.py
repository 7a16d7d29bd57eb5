"""Loading a build: find the published library of a spec's key and load it, building it first if
the cache has no valid one.

`load` looks in the cache, takes the key's lock, looks again and only then builds: in the
workspace of its toolchain (workspace.py), whose objects carry over from earlier builds, and then
published under the key (cache.py). Many processes or ranks importing at once build once; a
killed builder's lock dies with it. This package knows how to build and load a library, not what
is in it.
"""

from __future__ import annotations

import os
import re
import shutil
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import torch

from . import env
from .cache import Cache, Damaged, hold_shared, keep_days, make_private, sha256
from .errors import BuildError, CacheError, status
from .spec import BuildSpec
from .workspace import BuildFailed, Workspace

_held: list[int] = []  # descriptors that mark the loaded libraries in use (cache.hold_shared)


@dataclass(frozen=True)
class Build:
    """A library loaded into this process."""

    key: str
    namespace: str
    cuda_archs: tuple[str, ...]
    library: Path
    built_now: bool  # compiled by this call (False: loaded from the cache)


def load(spec: BuildSpec) -> Build:
    """Load the library for `spec`, building it first if the cache has no valid one."""
    key = spec.key()
    cache = Cache.default()
    cache.check_root()
    keep_days()  # a bad LLTM_JIT_KEEP_DAYS stops the import now, not after a build
    cache.sweep()
    # Another process's clean-up may remove the build between finding it and holding it (it
    # removes only builds that no process holds): then the build is looked for again.
    for _ in range(3):
        library, built_now = _find_or_build(spec, cache, key)
        try:
            held = hold_shared(library)  # first: no clean-up removes it while it loads
        except FileNotFoundError:
            continue
        except OSError as error:  # a lock refused (NFS without its lock service)
            raise _unloadable(library, error) from None
        try:
            torch.ops.load_library(str(library))
        except OSError as error:
            os.close(held)
            if not library.exists():
                continue
            raise _unloadable(library, error) from None
        _held.append(held)
        cache.touch(key)
        return Build(key, spec.namespace, spec.cuda_archs, library, built_now)
    raise BuildError(f"lltm_jit: the build {cache.entry(key)} was removed by another process each time before it "
                     "could be loaded (LLTM_JIT_KEEP_DAYS=0 in another process removes every build it does not hold)")


def _unloadable(library: Path, error: OSError) -> BuildError:
    """A build that is there and cannot be loaded: built elsewhere, say, for a newer libstdc++."""
    return BuildError(f"lltm_jit: the cached build {library} cannot be loaded ({error}); "
                      "remove it with `python -m lltm_jit clean`")


def _find_or_build(spec: BuildSpec, cache: Cache, key: str) -> tuple[Path, bool]:
    """`key`'s library, verified, and whether this call built it: looked for, then under `key`'s
    lock looked for again and built only if still missing."""
    try:
        library = cache.library(key)
    except Damaged:
        library = None
    if library is not None:
        return library, False
    with cache.locked(key):
        try:
            library = cache.library(key)
        except Damaged as damage:
            warnings.warn(f"lltm_jit: the cached build {cache.entry(key)} is damaged ({damage}); rebuilding",
                          RuntimeWarning, stacklevel=4)
            cache.discard(key)
        if library is not None:
            return library, False
        try:
            return _build(spec, cache, key), True
        except BuildError:
            cache.remove_lock(key)  # nothing of the key is left to guard
            raise


def _build(spec: BuildSpec, cache: Cache, key: str) -> Path:
    """Compile `spec` in its workspace, then publish the library as `key`'s build; returns the
    library's path. The caller holds `key`'s lock."""
    tools = env.check_tools(spec.cuda_archs)
    workspace = Workspace(cache, spec, tools)
    what = "C++" + (f" and CUDA (sm {', '.join(spec.cuda_archs)})" if spec.cuda_archs else "")
    status(f"compiling the {what} kernels for torch {torch.__version__}; this happens once "
           f"per source change and torch version (cache: {cache.root})")
    start = time.perf_counter()
    staging = cache.staging(key)  # its presence marks a build of `key` under way (or left by a dead one)
    with workspace.locked():
        try:
            result = workspace.build()
            library = staging / result.library.name
            with cache.writing():  # a full disk is the cache's error, which the fallback covers
                shutil.copyfile(result.library, library)
                make_private(library)
        except BaseException as error:
            shutil.rmtree(staging, ignore_errors=True)
            if isinstance(error, BuildFailed):
                raise _failure(spec, cache, key, str(error)) from None
            raise
    seconds = time.perf_counter() - start
    manifest = {
        "key": key,
        "library": library.name,
        "size": library.stat().st_size,
        "sha256": sha256(library),
        "src": str(spec.src),
        "namespace": spec.namespace,
        "workspace": str(workspace.root),
        "build_seconds": round(seconds, 2),
        "compiled": result.compiled,
        "reused": result.reused,
        "critical_path": result.critical_path(),
        "built_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "sources": [p.name for p in spec.sources()],
        **spec.environment(),
    }
    # The library is of the sources as the workspace copied them, which differ from those the key
    # was taken of if src/ changed in between (even if it changed back since); and it lacks any
    # edit made while it compiled.
    if result.key != key or spec.key() != key:
        warnings.warn("lltm_jit: the sources changed during the build; it is loaded but not cached",
                      RuntimeWarning, stacklevel=5)
        loose = cache.keep_loose(library, key)
        shutil.rmtree(staging, ignore_errors=True)
        return loose
    entry = cache.publish(staging, key, manifest)
    cache.prune(keep=key)
    compiled = [name for name in result.compiled if name != "link"]
    status(f"built in {seconds:.1f} s ({len(compiled)} files compiled, {len(result.reused)} reused)")
    return entry / library.name


# ---------------------------------------------------------------------------------------------
# Failure reports

# A compiler's or nvcc's error, or the linker's first row about one (its "in function" row).
_ERROR_ROW = re.compile(r"(^|[\s:])(fatal )?error( [A-Z]?\d+)?:|undefined reference|multiple definition|"
                        r"\(\d+\): error|(^|/)ld(\.\w+)?: ")
_NINJA_ROW = re.compile(r"\[\d+/\d+\] |ninja: |FAILED: ")
_NINJA_PROGRESS = re.compile(r"\[\d+/\d+\] |ninja: (build stopped|Entering directory)")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")


def describe_failure(log: str, spec: BuildSpec, lines: int = 8) -> tuple[str, str]:
    """(the source that failed, an excerpt: ninja's FAILED row and the compiler's first error
    rows) from a build's output."""
    rows = log.splitlines()
    failed = next((i for i, row in enumerate(rows) if row.startswith("FAILED: ")), None)
    if failed is None:  # no compiler failed: ninja itself (its "ninja: fatal: ..." rows)
        head, output = [], [row for row in rows if row.strip() and not _NINJA_PROGRESS.match(row)]
    else:  # ninja prints FAILED: <outputs>, the command, then the compiler's output
        end = next((i for i in range(failed + 2, len(rows)) if _NINJA_ROW.match(rows[i])), len(rows))
        head, output = [rows[failed]], rows[failed + 2 : end]
    first = next((i for i, row in enumerate(output) if _ERROR_ROW.search(row)), None)
    excerpt = "\n".join(head + (output[first : first + lines] if first is not None else output[-lines:]))
    if head and "lib/" in head[0]:  # the library: its linker's rows name objects, not a failed source
        return "the link", excerpt
    # The source named on the first error row; else the one whose object ninja reports as FAILED
    # (the workspace names the objects obj/<source>.o).
    for row in ([output[first]] if first is not None else []) + head:
        for source in spec.sources():
            if re.search(rf"(^|[\s/]){re.escape(source.name)}\b", row):
                return str(source), excerpt
    return "the extension", excerpt


def _failure(spec: BuildSpec, cache: Cache, key: str, output: str) -> BuildError:
    """The BuildError for a failed build: the failing source, an excerpt, the saved full log."""
    # The compilers name the sources as the workspace's ninja gave them, src/<name>: the user
    # edited them in spec.src.
    output = re.sub(r"(?<![\w./-])src/", f"{spec.src}/", _ANSI.sub("", output))
    failed, excerpt = describe_failure(output, spec)
    try:
        where = f"Full build log: {cache.save_log(key, output)}"
    except CacheError as error:
        where = f"The full build log could not be saved: {error}"
    return BuildError(f"lltm_jit: building {failed} failed:\n{excerpt}\n{where}")
