"""lltm_jit: the LLTM cell as JIT-compiled C++/CUDA PyTorch operators.

The first import compiles the bundled sources (once; see `lltm_jit.jit` for the build and its cache) and
registers ``torch.ops.lltm_jit.*``: the step (``forward``, ``backward``) and the whole sequence
(``sequence_forward``, ``sequence_backward``).
"""

import sys as _sys

from . import ops
from .jit import BuildError
from .modules import LLTM, LLTMSequence
from .ops import backend, build_info, lltm, lltm_sequence, reload
from .reference import reference_lltm, reference_lltm_sequence

__version__ = "0.1.0"
__all__ = [
    "LLTM", "LLTMSequence", "BuildError", "backend", "build_info", "lltm", "lltm_sequence", "reference_lltm",
    "reference_lltm_sequence", "reload",
]


def _run_as_command() -> bool:
    # `python -m lltm_jit ...` imports this package before its __main__: the command decides
    # what to build, so the import must not build first. sys.argv[0] is "-m" until then.
    # sys.orig_argv holds "-m", "lltm_jit" or "-mlltm_jit" (with other options before them).
    args = _sys.orig_argv
    return _sys.argv[:1] == ["-m"] and any(
        a == "-mlltm_jit" or (a == "-m" and args[i + 1 : i + 2] == ["lltm_jit"]) for i, a in enumerate(args)
    )


if not _run_as_command():
    ops.load_at_import()
