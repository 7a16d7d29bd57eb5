"""Command line: python -m lltm_jit {info,build,clean}."""

import argparse
import contextlib
import shlex
import sys
import time

import torch

from . import jit
from .jit import env
from .ops import NAMESPACE


def _when(seconds) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(seconds)) if seconds else "never"


def _info(args) -> int:
    spec = jit.BuildSpec.current(NAMESPACE)
    key = spec.key()
    home = jit.cuda_home()
    cache = jit.Cache.default()
    print(f"lltm_jit      {sys.modules['lltm_jit'].__version__}")
    print(f"python        {sys.version.split()[0]} ({sys.implementation.cache_tag})")
    print(f"torch         {torch.__version__} (CUDA {torch.version.cuda or 'none'})")
    print(f"C++ compiler  {shlex.join(env.cxx_command() or []) or 'not found'}")
    print(f"ninja         {env.ninja_path() or 'not found'}")
    print(f"CUDA toolkit  {home or 'not found'}")
    print(f"sources       {spec.src}")
    problem = cache.problem()
    print(f"cache         {cache.root}" + (f" (no new builds: {problem})" if problem else ""))
    print(f"this setup    key {key}: CPU" + (f" + CUDA sm {', '.join(spec.cuda_archs)}" if spec.cuda_archs else " only"))
    builds = cache.builds()
    build = next((b for b in builds if b["key"] == key), None)
    # As the import does: a cache, or a build of this key, that another user could have written is
    # refused (a damaged build is rebuilt).
    refused = None
    with contextlib.suppress(jit.cache.Damaged):
        try:
            cache.check_root()
            if build is not None:
                cache.library(key)
        except jit.CacheError as error:
            refused = str(error).removeprefix("lltm_jit: ")
    if refused:
        print(f"              the next import fails: {refused}")
    elif build is not None:
        print(f"              built in {build.get('build_seconds')} s; critical path: {build.get('critical_path')}")
        compiled = build.get("compiled", {})
        times = ", ".join(f"{name} {start:.1f}-{end:.1f}" for name, (start, end) in compiled.items())
        print(f"              compiled (start-end s): {times or 'nothing'}")
        print(f"              reused: {', '.join(build.get('reused', [])) or 'nothing'}")
    elif problem:
        print("              not built, and this cache cannot take the build: the next import fails. "
              "Set LLTM_JIT_CACHE_DIR to a writable directory.")
    else:
        try:
            jit.env.check_tools(spec.cuda_archs)
            print("              not built yet (the next import builds it)")
        except jit.BuildError as error:  # a compiler, ninja or the CUDA toolkit missing
            problem = str(error).removeprefix("lltm_jit: ")
            print(f"              not built, and the next import fails: {problem}")
    print(f"cached builds {len(builds)} (each removed {jit.cache.keep_days():g} days after its last use; "
          "LLTM_JIT_KEEP_DAYS sets it)")
    for b in builds:
        archs = ", ".join(b.get("cuda_archs", [])) or "cpu only"
        print(f"  {b['key']}  torch {b.get('torch')}  {archs}  built {b.get('built_at')}  "
              f"last used {_when(b.get('last_used'))}\n      from {b.get('src')} in {b['directory']}")
    return 1 if refused or (build is None and problem) else 0


def _cmake_args(build, include_dir) -> str:
    """The definitions that examples/cpp/CMakeLists.txt (and a project like it) needs; for a CUDA
    build also the toolkit that built it, which torch's CMake files otherwise guess from nvcc's
    place on PATH (wrongly for an nvcc in /usr/local/bin)."""
    import torch.utils

    definitions = [f"-DCMAKE_PREFIX_PATH={torch.utils.cmake_prefix_path}", f"-DLLTM_JIT_LIBRARY={build.library}",
                   f"-DLLTM_JIT_INCLUDE_DIR={include_dir}"]
    if build.cuda_archs and jit.cuda_home():
        definitions.append(f"-DCUDA_TOOLKIT_ROOT_DIR={jit.cuda_home()}")
    return shlex.join(definitions)


def _build(args) -> int:
    archs = () if args.cpu_only else (jit.parse_arch_list(args.arch) if args.arch else None)
    spec = jit.BuildSpec.current(NAMESPACE, archs)
    build = jit.load(spec)
    if args.cmake:
        print(_cmake_args(build, spec.src))
        return 0
    state = "built" if build.built_now else "already built"
    print(f"{state}: {build.library} (CUDA archs: {', '.join(build.cuda_archs) or 'none'})")
    print(f"""
For C++ programs (libtorch, no Python at run time; docs/deployment.md):
  header        {spec.src / 'lltm_jit.h'} (include dir {spec.src})
  link          the library above, as torch's CMake targets link torch_cpu, so that it stays loaded
                where the program calls none of its functions (an AOTInductor package reaches its
                operators through the dispatcher by name, torch.ops.{NAMESPACE}.*), after
                libstdc++ (torch's libraries export pieces of it; docs/deployment.md says why):
                -Wl,--no-as-needed,-l:libstdc++.so.6,{build.library} -Wl,--as-needed
  CMake         {_cmake_args(build, spec.src)}
                (`python -m lltm_jit build --cmake` prints that line alone)
  keep it       copy the library to a folder of its own and link programs to the copy
                (-DLLTM_JIT_LIBRARY=<copy>): a program loads the very path it was linked with, and the
                cache removes a build {jit.cache.keep_days():g} days after Python last loaded it
                (LLTM_JIT_KEEP_DAYS); a C++ program's use does not count""")
    return 0


def _clean(args) -> int:
    cache = jit.Cache.default()
    removed, busy = cache.clean()
    for path in removed:
        print(f"removed {path}")
    for key in busy:
        print(f"skipped (being built or loaded now): {cache.entry(key)}")
    if not removed and not busy:
        print(f"nothing to clean in {cache.root}")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lltm_jit", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("info", help="versions, cache directory and key, what is built, what the last build "
                        "compiled and reused; exits 1 if the next import fails: this setup is not built and the "
                        "cache cannot take it, or the cache directory or this setup's build is refused (others can write it)")
    build = commands.add_parser("build", help="build ahead of time (e.g. in a container image); say where the "
                                "library is and how a C++ program links it")
    build.add_argument("--arch", help="CUDA architectures, TORCH_CUDA_ARCH_LIST syntax: '8.0;9.0'")
    build.add_argument("--cpu-only", action="store_true", help="build the CPU kernels only")
    build.add_argument("--cmake", action="store_true", help="print only the CMake definitions that a C++ project "
                       "needs to find libtorch, the library and its header (for `cmake $(...)`)")
    commands.add_parser("clean", help="remove every cached build, workspace, lock file and build log, except "
                        "those in use")
    args = parser.parse_args(argv)
    try:
        return {"info": _info, "build": _build, "clean": _clean}[args.command](args)
    except jit.BuildError as error:
        print(error, file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
