"""The build cache: published libraries, one folder per key, and what guards them.

A build happens under its key's file lock, in a staging folder that is renamed into place when
complete, so that no process ever sees a half-built library. Entries are trusted only when this
user owns them and nobody else can write them, as ssh treats its key files: a library that someone
else could have planted is never loaded.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import math
import os
import re
import shutil
import stat
import time
from pathlib import Path

from . import env
from .errors import BuildError, CacheError, status


class Busy(Exception):
    """Another process holds the lock (`Cache.locked` with wait=False), or uses the build."""


class Damaged(Exception):
    """A published build does not match its manifest."""


_KEY = r"[0-9a-f]{24}"
_LEFTOVER = re.compile(rf"({_KEY})\.(?:tmp|trash)-\d+")
_CACHED = re.compile(rf"({_KEY})(?:\.lock|\.(?:tmp|trash)-\d+)?")  # anything of a key's
# How long a published build stays after its last use, unless LLTM_JIT_KEEP_DAYS says otherwise.
KEEP_DAYS = 14.0


def keep_days() -> float:
    """How long a published build stays after its last use: $LLTM_JIT_KEEP_DAYS, else KEEP_DAYS;
    BuildError for a value that is not a number of days (a NaN or a negative one would remove
    every build)."""
    given = os.environ.get("LLTM_JIT_KEEP_DAYS", "").strip()
    try:
        days = float(given) if given else KEEP_DAYS
    except ValueError:
        days = math.nan
    if not 0 <= days <= math.inf:
        raise BuildError(f"lltm_jit: LLTM_JIT_KEEP_DAYS must be a number of days, 0 or more, got {given!r}")
    return days


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def untrusted(path: Path) -> str | None:
    """Why `path` may have been written by someone else (owned by another user, or writable by
    its group or by others); None if only this user could have written it."""
    info = os.stat(path)
    if info.st_uid != os.geteuid():
        return f"{path} is owned by another user (uid {info.st_uid})"
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"{path} is writable by its group or by others (mode {stat.filemode(info.st_mode)})"
    return None


def make_private(path: Path) -> None:
    """Take group and others' write permission from a file or folder this process made (a umask
    of 002 would leave a library that the cache then refuses)."""
    mode = os.stat(path).st_mode
    if mode & (stat.S_IWGRP | stat.S_IWOTH):
        os.chmod(path, stat.S_IMODE(mode) & ~(stat.S_IWGRP | stat.S_IWOTH))


def hold_shared(path: Path) -> int:
    """A shared flock on `path`, held until the returned descriptor is closed (or the process
    ends): `Cache.in_use` sees it. Marks a loaded library as in use, so that no clean-up removes it."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    fcntl.flock(fd, fcntl.LOCK_SH)
    return fd


class Cache:
    """The build cache: a directory with one build per key and what guards them.

    ``<key>/``              a published build: the library, ``manifest.json``, ``last-used``
    ``<key>.lock``          held by whoever builds ``<key>``; an OS lock, which dies with its holder
    ``<key>.tmp-<pid>/``    a build in progress, renamed to ``<key>/`` when complete
    ``<key>.trash-<pid>/``  a build being removed, renamed first so nobody sees it half-deleted
    ``loose/``              libraries loaded but not published (their sources changed while they
                            compiled), each removed once no process holds it
    ``workspaces/``         the compile workspaces (workspace.py), one per toolchain and flags
    ``logs/``               the full logs of failed builds

    Only the holder of ``<key>.lock`` creates or removes ``<key>``'s folders, so a
    ``<key>.tmp-*`` or ``<key>.trash-*`` folder whose lock is free was left by a process that died.
    A process that loads a library holds a shared flock on it (`hold_shared`) until it ends.
    """

    def __init__(self, root: Path):
        self.root = Path(root)

    @classmethod
    def default(cls) -> Cache:
        return cls(env.cache_root())

    def entry(self, key: str) -> Path:
        return self.root / key

    def check_root(self) -> None:
        """CacheError if the cache directory exists but may hold what another user wrote."""
        with self.writing(), contextlib.suppress(FileNotFoundError):
            if reason := untrusted(self.root):
                raise CacheError(f"lltm_jit: refusing the cache directory: {reason}, so a library in it may "
                                 "not be this user's. Use a private directory (LLTM_JIT_CACHE_DIR), or "
                                 f"`chmod go-w {self.root}` if it is yours.")

    def library(self, key: str) -> Path | None:
        """The verified library of `key`'s build; None if there is none; Damaged if it is broken;
        CacheError if it may have been planted by someone else."""
        entry = self.entry(key)
        if not entry.exists():
            return None
        try:
            meta = json.loads((entry / "manifest.json").read_text())
            library = entry / meta["library"]
            for path in (entry, entry / "manifest.json", library):
                if reason := untrusted(path):
                    raise CacheError(f"lltm_jit: refusing the cached build {entry}: {reason}. Remove it "
                                     "(`python -m lltm_jit clean`) to rebuild it.")
            if library.stat().st_size != meta["size"] or sha256(library) != meta["sha256"]:
                raise Damaged(f"{library} does not match its checksum")
        except (OSError, ValueError, KeyError) as error:
            raise Damaged(str(error)) from error
        return library

    def touch(self, key: str) -> None:
        """Note that `key`'s build was used now (quietly: a read-only cache keeps its dates)."""
        with contextlib.suppress(OSError):
            (self.entry(key) / "last-used").touch()

    def last_used(self, key: str) -> float | None:
        for name in ("last-used", "manifest.json"):
            with contextlib.suppress(OSError):
                return os.stat(self.entry(key) / name).st_mtime
        return None

    def builds(self) -> list[dict]:
        """The manifests of the published builds, each with its ``directory`` and ``last_used``."""
        builds = []
        with contextlib.suppress(OSError):
            for manifest in sorted(self.root.glob("*/manifest.json")):
                with contextlib.suppress(OSError, ValueError):
                    meta = json.loads(manifest.read_text())
                    builds.append({"directory": str(manifest.parent), "last_used": self.last_used(meta["key"]),
                                   **meta})
        return builds

    @contextlib.contextmanager
    def locked(self, key: str, wait: bool = True, what: str = "building lltm_jit"):
        """Hold `key`'s lock (`key` may be a path under the cache, ``workspaces/<name>``). If
        another process holds it, wait (saying so) or, with wait=False, raise Busy."""
        import filelock  # a cached load never locks, and filelock is slow to import

        path = self.root / f"{key}.lock"
        lock = filelock.FileLock(path, thread_local=False)
        with self.writing():
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
            try:
                lock.acquire(timeout=0)
            except filelock.Timeout:
                if not wait:
                    raise Busy(key) from None
                status(f"waiting for another process that is {what} {Path(key).name} (lock {lock.lock_file})")
                lock.acquire()
        try:
            yield
        finally:
            lock.release()

    def remove_lock(self, key: str) -> None:
        """Remove `key`'s lock file; the caller holds it, and touches nothing of `key` after. A
        process that opened the old file before sees, once it gets the lock, that the file is gone
        (filelock checks) and locks a new one."""
        with contextlib.suppress(OSError):
            (self.root / f"{key}.lock").unlink()

    def staging(self, key: str) -> Path:
        """A new, empty folder to build `key` in. The caller holds `key`'s lock."""
        with self.writing():
            for path in self.leftovers(key):  # of a dead builder: we hold the lock
                shutil.rmtree(path)
            path = self.root / f"{key}.tmp-{os.getpid()}"
            path.mkdir(mode=0o755)
            make_private(path)
        return path

    def publish(self, staging: Path, key: str, manifest: dict) -> Path:
        """Give `staging` its manifest and rename it into place as `key`'s build."""
        with self.writing():
            (staging / "manifest.json").write_text(json.dumps(manifest, indent=1))
            make_private(staging / "manifest.json")
            os.rename(staging, self.entry(key))
        return self.entry(key)

    def keep_loose(self, library: Path, key: str) -> Path:
        """Move a library that is loaded but not published out of its staging folder, to
        ``loose/``, where it stays while a process holds it."""
        with self.writing():
            loose = self.root / "loose"
            loose.mkdir(exist_ok=True, mode=0o755)
            path = loose / f"{key}-{os.getpid()}-{time.monotonic_ns()}{library.suffix}"
            os.rename(library, path)
        return path

    def discard(self, key: str) -> None:
        """Remove `key`'s build, renamed first so that nobody sees it half-deleted. The caller
        holds `key`'s lock."""
        entry = self.entry(key)
        with self.writing():
            if entry.exists():
                trash = entry.with_name(f"{key}.trash-{os.getpid()}")
                os.rename(entry, trash)
                shutil.rmtree(trash, ignore_errors=True)

    def save_log(self, key: str, text: str) -> Path:
        """Keep the full log of a failed build of `key`; returns its path."""
        with self.writing():
            logs = self.root / "logs"
            logs.mkdir(exist_ok=True, mode=0o755)
            path = logs / f"{key}-{time.strftime('%Y%m%d-%H%M%S')}.log"
            path.write_text(text)
        return path

    def in_use(self, key: str) -> bool:
        """Whether a live process has `key`'s library loaded (holds it, `hold_shared`)."""
        with contextlib.suppress(OSError, ValueError, KeyError):
            library = self.entry(key) / json.loads((self.entry(key) / "manifest.json").read_text())["library"]
            return not _free(library)
        return False

    def sweep(self) -> None:
        """Remove what dead processes left: a key's staging or trash folders whose lock is free,
        and loose libraries nobody holds. Quiet: a cache it cannot write is left as it is."""
        for key in sorted({_LEFTOVER.fullmatch(path.name)[1] for path in self.leftovers()}):
            with contextlib.suppress(Busy, CacheError), self.locked(key, wait=False):
                for path in self.leftovers(key):
                    shutil.rmtree(path, ignore_errors=True)
        with contextlib.suppress(OSError):
            for path in (self.root / "loose").iterdir():
                if _free(path):
                    path.unlink(missing_ok=True)

    def prune(self, days: float | None = None, keep: str | None = None) -> list[Path]:
        """Remove the published builds unused for more than `days` (default keep_days(); 0: every
        one), except `keep` and those a process has loaded, with their lock files. Returns the
        folders removed."""
        days = keep_days() if days is None else days
        removed = []
        for build in self.builds():
            key = build.get("key")
            if key == keep or time.time() - (build["last_used"] or 0) <= days * 86400:
                continue
            with contextlib.suppress(Busy, CacheError), self.locked(key, wait=False):
                if not self.in_use(key):
                    self.discard(key)
                    self.remove_lock(key)
                    removed.append(self.entry(key))
        return removed

    def clean(self) -> tuple[list[Path], list[str]]:
        """Remove every build, leftover folder, workspace, lock file and log, except what is being
        built or loaded now. Returns (the paths removed, the keys skipped)."""
        removed, busy = [], []
        with self.writing():
            if not self.root.exists():
                return removed, busy
            names = os.listdir(self.root)
        for key in sorted({match[1] for match in map(_CACHED.fullmatch, names) if match}):
            try:
                with self.locked(key, wait=False), self.writing():
                    if self.in_use(key):
                        raise Busy(key)
                    if self.entry(key).exists():
                        self.discard(key)
                        removed.append(self.entry(key))
                    for path in self.leftovers(key):
                        shutil.rmtree(path)
                        removed.append(path)
                    self.remove_lock(key)
                    removed.append(self.root / f"{key}.lock")
            except Busy:
                busy.append(key)
        from .workspace import Workspace  # the workspace builds on the cache, not the other way

        removed += Workspace.clean_all(self)
        self.sweep()  # the loose libraries that no process holds
        with self.writing():
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
    def writing(self):
        """OSErrors as one CacheError, which names the cache and what to do."""
        try:
            yield
        except OSError as error:
            # A copy's error names its source, then the file it was writing (filename2).
            reason = self.problem() or f"{error.strerror or error} ({error.filename2 or error.filename})"
            raise CacheError(
                f"lltm_jit: cannot use the cache directory {self.root}: {reason}. "
                "Set LLTM_JIT_CACHE_DIR to a writable directory."
            ) from None


def _free(path: Path) -> bool:
    """Whether no process holds `path` (`hold_shared`)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)
