"""The JIT build of the bundled C++/CUDA sources, one concern per module, each using only those
before it:

- `errors`: BuildError, CacheError and the status line;
- `env`: paths and environment variables, the toolchain, the GPU architectures;
- `spec`: what to build (sources, flags) and the key that names it;
- `cache`: published builds (entries, locks, publish, sweep, trust, clean-up);
- `workspace`: compiling with ninja, objects reused across builds;
- `core`: `load`, the double-checked build-and-load.
"""

from .cache import Cache
from .core import Build, describe_failure, load
from .env import cuda_archs, cuda_home, env_flag, parse_arch_list, source_dir
from .errors import BuildError, CacheError
from .spec import BuildSpec

__all__ = ["Build", "BuildError", "BuildSpec", "Cache", "CacheError", "cuda_archs", "cuda_home", "describe_failure",
           "env_flag", "load", "parse_arch_list", "source_dir"]
