"""The build's errors and its one status line."""

from __future__ import annotations

import sys


class BuildError(RuntimeError):
    """The extension could not be built (a tool is missing or the compiler failed)."""


class CacheError(BuildError):
    """The cache directory cannot be used: not a directory, not writable, or not trusted."""


def status(message: str) -> None:
    print(f"lltm_jit: {message}", file=sys.stderr, flush=True)
