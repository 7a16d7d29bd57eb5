"""The compile workspace: one persistent folder per toolchain and flags, where ninja compiles each
source to an object and links them, so that an edit recompiles only what it affects.

``workspaces/<name>/`` of the cache, ``<name>`` a hash of everything an object depends on besides
its sources (`Workspace.config`: the flags, the compilers and their versions, torch, the GPU
architectures), holds

``src/``         a mirror of the sources of the build at hand: a file is rewritten only when its
                 content differs, so that ninja, which compares modification times, recompiles
                 the sources that changed and, through the compilers' dependency files, those
                 that include a changed header, whichever folder the sources came from
``gen/``         the one-line file that names the operator namespace (src/namespace.h), one per
                 namespace: a reload under a new namespace compiles that file alone
``obj/``, ``lib/``  the objects and the linked libraries
``build.ninja``  rewritten only when it changes; ``.ninja_log`` and ``.ninja_deps``, ninja's own.
                 Its paths are relative to the workspace, which can move (a cache copied whole).

A build holds the workspace's lock throughout, so two processes building different sources in one
workspace take turns and never mix objects. Every compile writes ``<object>.tmp`` and renames it
when complete, so a killed build leaves no partial object; ninja also recompiles any output its
log has no record of. A stale object is a wrong answer, never a speed-up.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import env, ninja_guard
from .cache import Cache, make_private, untrusted
from .errors import CacheError
from .spec import CXX_FILE_FLAGS, LD_FLAGS, BuildSpec

GUARD = Path(ninja_guard.__file__).resolve()


class BuildFailed(Exception):
    """ninja failed; the argument is its output."""


@dataclass
class Result:
    library: Path
    key: str  # the key (BuildSpec.key) of the sources compiled, as mirrored
    compiled: dict[str, list[float]] = field(default_factory=dict)  # file -> [start, end] s
    reused: list[str] = field(default_factory=list)

    def critical_path(self) -> str:
        """The compile that finished last and the link after it, as `info` prints them."""
        steps = sorted(self.compiled.items(), key=lambda item: item[1][1])
        last = [name for name, _ in steps if name != "link"][-1:] + (["link"] if "link" in self.compiled else [])
        return ", ".join(f"{name} {self.compiled[name][0]:.1f}-{self.compiled[name][1]:.1f} s" for name in last)


def _version(command: list[str]) -> str:
    """The first line of a compiler's --version (the last, for nvcc: its release line)."""
    try:
        lines = subprocess.run(command, capture_output=True, text=True, timeout=60).stdout.strip().splitlines()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return (lines[-1] if "nvcc" in command[0] else lines[0]) if lines else "unknown"


def _local_includes(path: Path) -> list[str]:
    return re.findall(r'^\s*#\s*include\s+"([^"]+)"', path.read_text(errors="replace"), re.M)


def _includes(path: Path, folders: str, seen: set[str] | None = None) -> bool:
    """Whether `path` includes a header under one of `folders` (a regex of top folders, as
    "torch" or "ATen|c10"), itself or through the headers of its folder."""
    seen = set() if seen is None else seen
    if re.search(rf"^\s*#\s*include\s+<({folders})/", path.read_text(errors="replace"), re.M):
        return True
    for name in _local_includes(path):
        header = path.parent / name
        if name not in seen and header.is_file():
            seen.add(name)
            if _includes(header, folders, seen):
                return True
    return False


def _quote(path) -> str:
    """A path in build.ninja (ninja escapes $, spaces and colons with $)."""
    return re.sub(r"([$ :])", r"$\1", str(path))


def _command(args) -> str:
    """Arguments as a variable of build.ninja that a command line takes: quoted for the shell
    that runs it (torch's own folders may have spaces), $ escaped for ninja."""
    return shlex.join(str(a) for a in args).replace("$", "$$")


class Workspace:
    def __init__(self, cache: Cache, spec: BuildSpec, tools: dict[str, str]):
        self.cache, self.spec, self.tools = cache, spec, tools
        self.include, self.lib = env.torch_paths()
        digest = hashlib.sha256(json.dumps(self.config(), sort_keys=True).encode()).hexdigest()
        self.name = digest[:16]
        self.root = cache.root / "workspaces" / self.name

    def config(self) -> dict:
        """What every object of a build depends on besides the sources."""
        cuda = self.tools.get("cuda_home")
        return {
            **self.spec.environment(),
            "cxx_path": self.tools["cxx"],
            "cxx_version": _version([*shlex.split(self.tools["cxx"]), "--version"]),
            "nvcc_version": _version([f"{cuda}/bin/nvcc", "--version"]) if cuda else None,
            "torch_include": str(self.include),
        }

    @contextlib.contextmanager
    def locked(self):
        with self.cache.locked(f"workspaces/{self.name}", what="compiling in the workspace"):
            yield

    # -----------------------------------------------------------------------------------------

    def build(self) -> Result:
        """Bring the workspace's library for `self.spec` up to date; the caller holds the lock.
        BuildFailed with ninja's output if a compile or the link fails."""
        with self.cache.writing():
            # One at a time: mkdir's parents get the umask's mode (group-writable under 002), not 0o755.
            folders = [self.root / name for name in ("src", "gen", "obj", "lib")]
            for folder in (self.root, *folders):
                folder.mkdir(exist_ok=True, mode=0o755)
            self._check_trust([self.root, *folders])
            for stale in (p for folder in folders for p in folder.glob("*.tmp")):
                stale.unlink()  # of a killed write or compile (under the umask's mode): never an input
            ninja_files = (self.root / name for name in ("build.ninja", ".ninja_log", ".ninja_deps"))
            self._check_trust([*(p for p in ninja_files if p.exists()),
                               *(p for folder in folders for p in sorted(folder.iterdir()))])
            key = self.spec.key(self._mirror())
            namespace_file = self._write_namespace()
            library = self.root / "lib" / f"lltm_jit_{self.spec.namespace}.so"
            edges = self._edges(namespace_file)
            self._write_if_changed(self.root / "build.ninja", self._ninja_file(edges, library))
        # (output, what `info` names it): the objects by their sources, the library as "link".
        outputs = [(out, source.name) for out, source in edges] + [(str(library.relative_to(self.root)), "link")]
        before = {out: _mtime(self.root / out) for out, _ in outputs}
        self._run_ninja()
        return self._result(library, key, outputs, before)

    def _check_trust(self, paths: list[Path]) -> None:
        """CacheError naming the first of the workspace's `paths` (its folders, ninja's files, the
        files in the folders) that someone else could have written: ninja takes a planted object
        or library for up to date, and the library is published."""
        for path in paths:
            if reason := untrusted(path):
                raise CacheError(f"lltm_jit: refusing the workspace {self.root}: {reason}. Remove it "
                                 "(`python -m lltm_jit clean`) to rebuild it.")

    def _mirror(self) -> list[tuple[str, bytes]]:
        """Make src/ hold exactly the spec's files, rewriting only those whose content differs;
        returns what it wrote there, (name, content) per file, each file read once."""
        mirror = self.root / "src"
        newest = max((_mtime(p) or 0 for p in (self.root / "obj").iterdir()), default=0)
        contents = self.spec.contents()
        names = {name for name, _ in contents}
        for stale in mirror.iterdir():
            if stale.name not in names:
                stale.unlink()
        for name, content in contents:
            target = mirror / name
            with contextlib.suppress(OSError):
                if target.read_bytes() == content:
                    continue
            self._write(target, content)
            # Newer than every object, even where the clock moves in coarse steps, so that ninja
            # never takes an object for newer than the edit it must follow.
            if _mtime(target) <= newest:
                _make_newer(target, newest)
        return contents

    def _write_namespace(self) -> Path:
        path = self.root / "gen" / f"namespace-{self.spec.namespace}.cpp"
        self._write_if_changed(path, "// The operator namespace of this build (src/namespace.h).\n"
                                     f'namespace lltm {{\nextern const char kNamespace[] = "{self.spec.namespace}";\n}}\n')
        return path

    def _edges(self, namespace_file: Path) -> list[tuple[str, Path]]:
        """(object, source) per compile, in the order ninja starts them: the files that include
        torch's own headers (<torch/...>: the slowest), then the CUDA ones, then those that include
        ATen's or c10's, then the rest, so that a cold build starts its slowest compiles at once and
        the short ones last fill the gaps that the long ones leave."""
        mirror = self.root / "src"
        sources = [mirror / p.name for p in self.spec.sources()]
        order = sorted(sources, key=lambda p: (not _includes(p, "torch"), p.suffix != ".cu",
                                               not _includes(p, "ATen|c10"), p.name))
        return [(f"obj/{p.name}.o", p.relative_to(self.root)) for p in order + [namespace_file]]

    def _ninja_file(self, edges: list[tuple[str, Path]], library: Path) -> str:
        spec, include = self.spec, self.include
        includes = ["-isystem", include, "-isystem", include / "torch" / "csrc" / "api" / "include"]
        # -rpath: a C++ program that links the library (docs/deployment.md) finds torch's libraries
        # and CUDA's runtime from it, with no LD_LIBRARY_PATH; Python has them loaded already.
        libs = [f"-L{self.lib}", f"-Wl,-rpath,{self.lib}", "-lc10", "-ltorch_cpu", "-ltorch"]
        cuda = self.tools.get("cuda_home")
        if cuda:
            includes += ["-isystem", f"{cuda}/include"]
            libs += ["-lc10_cuda", "-ltorch_cuda", f"-L{cuda}/lib64", f"-Wl,-rpath,{cuda}/lib64", "-lcudart"]
        rows = [
            "ninja_required_version = 1.3",
            f"cxx = {_command(shlex.split(self.tools['cxx']))}",
            f"cxx_flags = {_command([*spec.cxx_flags(), *includes])}",
            f"ld_flags = {_command(['-shared', *LD_FLAGS, *libs])}",
            "",
            # -MT names the object, not the .tmp it is written to, in the dependency file.
            "rule cxx",
            "  command = $cxx -MMD -MT $out -MF $out.d $cxx_flags -c $in -o $out.tmp && mv -f $out.tmp $out",
            "  depfile = $out.d",
            "  deps = gcc",
            "  description = $in",
            "",
            "rule link",
            "  command = $cxx $in $ld_flags -o $out.tmp && mv -f $out.tmp $out",
            "  description = link",
            "",
        ]
        if cuda:
            rows[3:3] = [f"nvcc = {_command([cuda + '/bin/nvcc'])}",
                         f"nvcc_flags = {_command([*spec.nvcc_flags(), *includes])}"]
            rows += [
                "rule nvcc",
                "  command = $nvcc -MMD -MT $out -MF $out.d $nvcc_flags -c $in -o $out.tmp && mv -f $out.tmp $out",
                "  depfile = $out.d",
                "  deps = gcc",
                "  description = $in",
                "",
            ]
        for out, source in edges:
            rule = "nvcc" if source.suffix == ".cu" else "cxx"
            rows.append(f"build {_quote(out)}: {rule} {_quote(source)}")
            if rule == "cxx" and source.name in CXX_FILE_FLAGS:
                rows.append(f"  cxx_flags = $cxx_flags {_command(CXX_FILE_FLAGS[source.name])}")
        objects = " ".join(_quote(out) for out, _ in edges)
        rows += ["", f"build {_quote(library.relative_to(self.root))}: link {objects}",
                 f"default {_quote(library.relative_to(self.root))}", ""]
        return "\n".join(rows)

    def _run_ninja(self) -> None:
        """Run ninja under the guard (ninja_guard.py); BuildFailed with its output on failure."""
        log = self.root / "build.log"
        log.unlink(missing_ok=True)
        jobs = env.max_jobs()
        command = [sys.executable, "-I", "-S", str(GUARD), str(os.getpid()), str(self.root), self.tools["ninja"],
                   "-j", jobs]
        # Verbose, ninja's progress and the compilers' output go to file descriptor 2, as the status
        # line does: stdout is the caller's (`python -m lltm_jit build --cmake` prints its line there).
        verbose = env.env_flag("LLTM_JIT_VERBOSE")
        try:
            code = subprocess.run(command, cwd=self.root, stdin=subprocess.DEVNULL,
                                  stdout=2 if verbose else subprocess.DEVNULL).returncode
        except BaseException:
            self.wait_for_stop()
            raise  # a KeyboardInterrupt above all: the build is stopped, the workspace kept
        if code != 0:
            self.wait_for_stop()
            # A Ctrl-C reaches the guard and this process together; the guard can exit before
            # this process runs its handler, and its build must not then read as failed.
            if code == ninja_guard.STOPPED:
                raise KeyboardInterrupt
            raise BuildFailed(log.read_text(errors="replace") if log.exists() else "")

    def wait_for_stop(self, timeout: float = 10.0) -> None:
        """Wait (up to `timeout` seconds) until no process of the build runs (ninja_guard.py)."""
        try:
            running = os.open(self.root / ".running", os.O_RDONLY)
        except OSError:
            return  # ninja never ran
        deadline = time.monotonic() + timeout
        try:
            while True:
                try:
                    fcntl.flock(running, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    return
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        return
                    time.sleep(0.01)
        finally:
            os.close(running)

    def _result(self, library: Path, key: str, outputs: list[tuple[str, str]], before: dict) -> Result:
        """Which files this run compiled (their start and end in seconds, from ninja's log) and
        which it reused."""
        times = {}
        with contextlib.suppress(OSError):
            for row in (self.root / ".ninja_log").read_text().splitlines():
                fields = row.split("\t")
                if not row.startswith("#") and len(fields) >= 4:
                    times[fields[3]] = [int(fields[0]) / 1000, int(fields[1]) / 1000]
        result = Result(library, key)
        for out, name in outputs:
            if _mtime(self.root / out) != before[out]:
                result.compiled[name] = times.get(out, [0.0, 0.0])
            elif name != "link":
                result.reused.append(name)
        return result

    @staticmethod
    def _write(path: Path, content: bytes | str) -> None:
        """Write `path` whole: a new file renamed over the old one."""
        tmp = path.with_name(path.name + ".tmp")
        (tmp.write_bytes if isinstance(content, bytes) else tmp.write_text)(content)
        make_private(tmp)
        os.replace(tmp, path)

    @classmethod
    def _write_if_changed(cls, path: Path, text: str) -> None:
        with contextlib.suppress(OSError):
            if path.read_text() == text:
                return
        cls._write(path, text)

    @staticmethod
    def clean_all(cache: Cache) -> list[Path]:
        """Remove every workspace that no process is compiling in; returns those removed."""
        from .cache import Busy

        removed = []
        folder = cache.root / "workspaces"
        with contextlib.suppress(OSError):
            for path in sorted(p for p in folder.iterdir() if p.is_dir()):
                with contextlib.suppress(Busy, CacheError), cache.locked(f"workspaces/{path.name}", wait=False):
                    shutil.rmtree(path)
                    cache.remove_lock(f"workspaces/{path.name}")
                    removed.append(path)
            folder.rmdir()  # where no workspace is left
        return removed


def _make_newer(path: Path, newest: int) -> None:
    """Give `path` a modification time past `newest` (ns), by the least step its file system
    keeps: a time of 1 ns more is rounded down to `newest`'s own where timestamps have whole
    seconds (ext3, HFS+) or even seconds (FAT)."""
    for step in (1, 10**3, 10**6, 10**9, 2 * 10**9):
        os.utime(path, ns=(newest + step, newest + step))
        if _mtime(path) > newest:
            return


def _mtime(path: Path) -> int | None:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return None
