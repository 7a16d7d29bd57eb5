"""The JIT loader: the cache in process, and each build case in fresh subprocesses with a
temporary cache directory (the programs they run are in tests/programs/).

The loader's logic does not depend on the backend, so these builds are CPU-only
(LLTM_JIT_CUDA=0) to keep them quick; the CUDA build is exercised by every other test on a GPU.
The subprocess tests are marked slow: each imports torch, and most compile.
"""

import errno
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from lltm_jit import jit
from lltm_jit.jit.workspace import Workspace, _includes

REPO = Path(__file__).resolve().parent.parent
PROGRAMS = Path(__file__).resolve().parent / "programs"
TIMEOUT = 600
# The kill and Ctrl-C tests allow this long between the signal and the last process of the build.
STOP_SECONDS = 2.0


def env_for(tree, cache, **extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("LLTM_JIT_")}
    env.update(PYTHONPATH=str(tree), LLTM_JIT_CACHE_DIR=str(cache), LLTM_JIT_CUDA="0")
    env.update({k: str(v) for k, v in extra.items()})
    return env


def run(tree, cache, *args, prefix=(), **extra):
    """`python ARGS` with `tree` on its path and `cache` as its cache; `prefix` goes before."""
    return subprocess.run([*prefix, sys.executable, *map(str, args)], env=env_for(tree, cache, **extra),
                          cwd=tree, capture_output=True, text=True, timeout=TIMEOUT)


def python(tree, cache, code="import lltm_jit", **extra):
    return run(tree, cache, "-c", code, **extra)


def command(tree, cache, *args, **extra):
    """`python -m lltm_jit ARGS`."""
    return run(tree, cache, "-m", "lltm_jit", *args, **extra)


def spawn(tree, cache, **extra):
    """An importer in a process group of its own, as a shell runs a command, with Ctrl-C's
    default disposition: a runner started in the background of a shell without job control
    (nohup ... &) ignores SIGINT, and Python then keeps it ignored rather than raise
    KeyboardInterrupt."""
    return subprocess.Popen([sys.executable, "-c", "import lltm_jit"], env=env_for(tree, cache, **extra),
                            cwd=tree, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def unprivileged():
    """A command prefix that takes from root its power to ignore file permissions (the tests run
    as root in CI): without CAP_DAC_OVERRIDE, root obeys a folder's mode like any user."""
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        pytest.skip("needs setpriv (util-linux) to run a program as root without CAP_DAC_OVERRIDE")
    return ["setpriv", "--bounding-set=-dac_override,-dac_read_search", "--"]


def read_only(path):
    for folder, dirs, files in os.walk(path):
        for name in files:
            os.chmod(os.path.join(folder, name), 0o444)
        os.chmod(folder, 0o555)


def entries(cache):
    """The published builds' folders."""
    return [b["directory"] for b in jit.Cache(cache).builds()]


def leftovers(cache):
    return jit.Cache(cache).leftovers()


def build_processes(cache):
    """The processes working in the cache (ninja and the compilers run in their build folder)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.readlink(f"/proc/{pid}/cwd").startswith(str(cache)):
                found.append(Path(f"/proc/{pid}/comm").read_text().strip())
        except OSError:
            pass  # gone, or not ours to read
    return found


def wait_for(predicate, timeout=TIMEOUT, what="the condition"):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out after {timeout} s waiting for {what}"
        time.sleep(0.005)


def compiling(cache, proc):
    """Wait until a compiler of `proc`'s build runs."""
    wait_for(lambda: "cc1plus" in build_processes(cache) or proc.poll() is not None, what="a compiler")
    assert proc.poll() is None, f"the build ended before a compiler was seen: {proc.communicate()}"


def assert_build_stops(cache):
    """The build's processes are all gone within STOP_SECONDS."""
    wait_for(lambda: not build_processes(cache), STOP_SECONDS, f"the build's processes {build_processes(cache)} to stop")


def edit_a_source(tree):
    """A harmless edit to the sources in `tree`: a new key."""
    source = jit.BuildSpec("lltm_jit", (), tree / "src").sources()[0]
    source.write_text(source.read_text() + "\n// an edit\n")


@pytest.fixture
def tree(tmp_path):
    """A copy of the package and its sources, free to edit."""
    root = tmp_path / "tree"
    shutil.copytree(REPO / "lltm_jit", root / "lltm_jit", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "src", root / "src")
    return root


@pytest.fixture(scope="session")
def built_cache(tmp_path_factory):
    """A cache holding the CPU build of the unmodified sources (a copy has the same key)."""
    cache = tmp_path_factory.mktemp("built_cache")
    result = python(REPO, cache)
    assert result.returncode == 0, result.stderr
    return cache


@pytest.fixture
def warm_cache(tmp_path, built_cache):
    cache = tmp_path / "cache"
    shutil.copytree(built_cache, cache)
    return cache


# ---------------------------------------------------------------------------------------------
# In process: the key, the cache object, failure excerpts


def test_key_covers_torch_cuda_arch_python_and_namespace(monkeypatch):
    spec = jit.BuildSpec("lltm_jit", (), jit.source_dir())
    base = spec.key()
    assert jit.BuildSpec("lltm_jit", (), jit.source_dir()).key() == base
    assert jit.BuildSpec("lltm_jit", ("9.0",), spec.src).key() != base
    assert jit.BuildSpec("lltm_jit", ("8.0",), spec.src).key() != jit.BuildSpec("lltm_jit", ("9.0",), spec.src).key()
    assert jit.BuildSpec("lltm_jit_x", (), spec.src).key() != base
    for target, name, value in [(torch, "__version__", "9.9.9"), (torch.version, "cuda", "99.1"),
                                (torch.version, "git_version", "0" * 40),
                                (sys.implementation, "cache_tag", "cpython-399")]:
        with monkeypatch.context() as m:
            m.setattr(target, name, value)
            assert spec.key() != base, name
    assert spec.key() == base


def test_arch_list_parsing(monkeypatch):
    assert jit.parse_arch_list("9.0;8.0 8.0,9.0+PTX") == ("8.0", "9.0", "9.0+PTX")
    with pytest.raises(jit.BuildError, match="invalid CUDA architecture 'sm_90'"):
        jit.parse_arch_list("sm_90")
    monkeypatch.setattr(torch.version, "cuda", "13.0")
    monkeypatch.setenv("TORCH_CUDA_ARCH_LIST", "9.0")
    assert jit.cuda_archs() == ("9.0",)
    for off in ("0", "false", "Off", "no"):
        monkeypatch.setenv("LLTM_JIT_CUDA", off)
        assert jit.cuda_archs() == (), off
    # Without the list, the machine's GPUs: Hopper's with its own instructions (sm_90a's wgmma)
    monkeypatch.delenv("LLTM_JIT_CUDA")
    monkeypatch.delenv("TORCH_CUDA_ARCH_LIST")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setattr(jit.env, "_nvml_gpu_archs", lambda: ("8.0", "9.0"))
    assert jit.cuda_archs() == ("8.0", "9.0a")


def test_a_relative_cache_dir_is_resolved_once(tmp_path, monkeypatch):
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LLTM_JIT_CACHE_DIR", f"cache-{tmp_path.name}")
    assert jit.Cache.default().root == tmp_path / f"cache-{tmp_path.name}"
    monkeypatch.chdir(tmp_path / "elsewhere")
    assert jit.Cache.default().root == tmp_path / f"cache-{tmp_path.name}"


def fake_build(cache, key, publish):
    """A build of `key` as its builder leaves it: published, or (a killed builder) staged only."""
    with cache.locked(key):
        staging = cache.staging(key)
        (staging / "library.so").write_bytes(b"not a library")
        if publish:
            cache.publish(staging, key, {"key": key, "library": "library.so"})
        return staging


def test_sweep_removes_the_folders_of_dead_builders_only(tmp_path):
    cache = jit.Cache(tmp_path / "cache")
    dead, running = "a" * 24, "b" * 24
    fake_build(cache, dead, publish=False)
    with cache.locked(running):
        staging = cache.staging(running)
        cache.sweep()
        assert cache.leftovers() == [staging]


def test_clean_removes_everything_but_a_running_build(tmp_path):
    cache = jit.Cache(tmp_path / "cache")
    published, dead, running = "a" * 24, "b" * 24, "c" * 24
    fake_build(cache, published, publish=True)
    fake_build(cache, dead, publish=False)
    cache.save_log(dead, "the output of a failed build")
    assert [b["key"] for b in cache.builds()] == [published]
    with cache.locked(running):
        staging = cache.staging(running)
        removed, busy = cache.clean()
        assert busy == [running] and removed
        assert staging.exists() and all(p.name.startswith(running) for p in cache.root.iterdir())
    removed, busy = cache.clean()
    assert busy == [] and list(cache.root.iterdir()) == []  # the lock files too


def test_prune_removes_old_builds_but_one_in_use_or_kept(tmp_path):
    cache = jit.Cache(tmp_path / "cache")
    old, held, kept, recent = "a" * 24, "b" * 24, "c" * 24, "d" * 24
    for key in (old, held, kept, recent):
        fake_build(cache, key, publish=True)
        (cache.entry(key) / "library.so").chmod(0o644)
    month_ago = time.time() - 30 * 86400
    for key in (old, held, kept):
        cache.touch(key)
        os.utime(cache.entry(key) / "last-used", (month_ago, month_ago))
    fd = jit.cache.hold_shared(cache.entry(held) / "library.so")
    try:
        assert cache.prune(days=14, keep=kept) == [cache.entry(old)]
    finally:
        os.close(fd)
    assert sorted(b["key"] for b in cache.builds()) == [held, kept, recent]
    assert not (cache.root / f"{old}.lock").exists()


@pytest.mark.parametrize("where", ["a file", "under a file"])
def test_a_cache_path_that_is_not_a_directory_gives_one_clear_error(tmp_path, monkeypatch, where):
    file = tmp_path / "file"
    file.write_text("")
    root = file if where == "a file" else file / "cache"
    monkeypatch.setenv("LLTM_JIT_CACHE_DIR", str(root))
    assert jit.Cache.default().problem().endswith("is not a directory")
    message = f"cannot use the cache directory {root}: .* not a directory. Set LLTM_JIT_CACHE_DIR"
    with pytest.raises(jit.CacheError, match=message):  # a BuildError, which the fallback covers
        jit.load(jit.BuildSpec.current("lltm_jit_never_built"))


def ninja_failure(failed, other, object_name, error_file):
    """ninja's output when `failed` (compiled to `object_name`) stops on an error in `error_file`
    while `other` compiles on."""
    return f"""\
[1/3] c++ -MMD -MF {object_name}.d -O3 -c {failed} -o {object_name}
FAILED: [code=1] {object_name}
c++ -MMD -MF {object_name}.d -O3 -c {failed} -o {object_name}
{error_file}: In function 'int broken()':
{error_file}:183:23: error: 'undeclared_name' was not declared in this scope
  183 | int broken() {{ return undeclared_name; }}
      |                       ^~~~~~~~~~~~~~~
[2/3] c++ -MMD -MF other.o.d -O3 -c {other} -o other.o
ninja: build stopped: subcommand failed.
"""


def test_a_failure_excerpt_is_ninjas_failed_row_and_the_compilers_errors():
    spec = jit.BuildSpec("lltm_jit", ("9.0",), jit.source_dir())
    cpp, other = [p for p in spec.sources() if p.suffix == ".cpp"][:2]
    output = ninja_failure(cpp, other, f"obj/{cpp.name}.o", cpp)
    failed, excerpt = jit.describe_failure(output, spec)
    assert failed == str(cpp)
    assert excerpt.splitlines() == output.splitlines()[1:2] + output.splitlines()[4:7]

    # An error in a header names the failed object's source: a .cu file, whose object is
    # obj/<name>.o, beside a .cpp file of the same stem.
    cu = spec.src / "cell_cuda.cu"
    assert cu in spec.sources() and spec.src / "cell_cuda.cpp" in spec.sources()
    output = ninja_failure(cu, other, f"obj/{cu.name}.o", spec.src / "a_header.h")
    failed, excerpt = jit.describe_failure(output, spec)
    assert failed == str(cu)
    assert excerpt.splitlines()[0] == f"FAILED: [code=1] obj/{cu.name}.o"


def test_a_failure_of_ninja_itself_keeps_its_row():
    spec = jit.BuildSpec("lltm_jit", (), jit.source_dir())
    failed, excerpt = jit.describe_failure("ninja: fatal: loading 'build.ninja': a reason\n", spec)
    assert (failed, excerpt) == ("the extension", "ninja: fatal: loading 'build.ninja': a reason")


@pytest.mark.parametrize("value", ["abc", "nan", "-1"])
def test_a_bad_keep_days_is_an_error_naming_it(value, monkeypatch):
    monkeypatch.setenv("LLTM_JIT_KEEP_DAYS", value)
    with pytest.raises(jit.BuildError, match=f"LLTM_JIT_KEEP_DAYS must be a number of days, 0 or more, got '{value}'"):
        jit.cache.keep_days()


def test_the_key_leaves_out_editors_files(tmp_path):
    """An editor's lock beside a file with unsaved changes (a dangling link, `.#name`) and its
    hidden copies are not sources."""
    shutil.copytree(REPO / "src", tmp_path / "src")
    spec = jit.BuildSpec("lltm_jit", (), tmp_path / "src")
    files, key = spec.files(), spec.key()
    (tmp_path / "src" / ".#ops.cpp").symlink_to("user@host.1234:1700000000")
    (tmp_path / "src" / ".ops.cpp.swp.h").write_text("not a source")
    assert spec.files() == files and spec.key() == key


# ---------------------------------------------------------------------------------------------
# In process: builds of a tree of one small file (a second or two each)


@pytest.fixture
def tiny(tmp_path, monkeypatch):
    """The spec of a tree of one small file that uses c10 (its headers and its library), and a
    cache of its own, in folders whose names have spaces."""
    src = tmp_path / "tiny src"
    src.mkdir()
    (src / "tiny.cpp").write_text('#include <c10/util/Exception.h>\n'
                                  'int lltm_tiny(int n) { TORCH_CHECK(n > 0, "n"); return n; }\n')
    monkeypatch.setenv("LLTM_JIT_CACHE_DIR", str(tmp_path / "a cache"))
    return jit.BuildSpec("lltm_jit_tiny", (), src)


def test_a_new_workspace_is_private_under_umask_002(tiny):
    """Debian's umask for users with a group of their own: the folders the build makes are not
    group-writable, so the cache trusts them (it refused the workspace it had just made)."""
    old = os.umask(0o002)
    try:
        build = jit.load(tiny)
    finally:
        os.umask(old)
    assert build.built_now
    cache = jit.Cache.default()
    for path in [cache.root, *cache.root.glob("workspaces/*/"), build.library.parent, build.library]:
        assert jit.cache.untrusted(path) is None, path


def test_torch_in_a_folder_with_spaces(tiny, tmp_path, monkeypatch):
    """torch in a virtual environment under "My Project/": its include and library folders reach
    the compiler and the linker quoted."""
    torch_dir = tmp_path / "my torch $HOME"
    torch_dir.mkdir()
    include, lib = jit.env.torch_paths()
    (torch_dir / "include").symlink_to(include)
    (torch_dir / "lib").symlink_to(lib)
    monkeypatch.setattr(jit.env, "torch_paths", lambda: (torch_dir / "include", torch_dir / "lib"))
    assert jit.load(tiny).built_now


def test_a_compiler_command_with_options(tiny, tmp_path, monkeypatch):
    """CXX may carry a wrapper or options, as in torch (`ccache g++`), or be a path with spaces;
    one the shell could not split is an error naming it."""
    monkeypatch.setenv("CXX", "env LLTM_JIT_TEST=1 c++ -fdiagnostics-color=never")
    assert jit.load(tiny).built_now
    (tmp_path / "my tools").mkdir()
    (tmp_path / "my tools" / "c++").symlink_to(shutil.which("c++"))
    monkeypatch.setenv("CXX", str(tmp_path / "my tools" / "c++"))
    (tiny.src / "tiny.cpp").write_text((tiny.src / "tiny.cpp").read_text() + "// a new key\n")
    assert jit.load(tiny).built_now
    monkeypatch.setenv("CXX", 'c++ "-O2')
    with pytest.raises(jit.BuildError, match="CXX='c\\+\\+ \"-O2' is not a command line"):
        jit.load(jit.BuildSpec(tiny.namespace + "_other", (), tiny.src))


@pytest.mark.parametrize("kind", ["undefined", "twice"])
def test_a_link_error_names_the_symbol_and_publishes_nothing(tiny, kind):
    """A symbol no file defines fails the link (a published build would fail to load at every
    import), and the excerpt has the linker's rows, which name the symbol."""
    if kind == "undefined":
        (tiny.src / "tiny.cpp").write_text("int lltm_nowhere();\nint lltm_tiny() { return lltm_nowhere(); }\n")
        said = "undefined reference to `lltm_nowhere()'"
    else:  # defined in a header that two files include
        (tiny.src / "twice.h").write_text("int lltm_twice() { return 2; }\n")
        for name in ("tiny.cpp", "other.cpp"):
            (tiny.src / name).write_text('#include "twice.h"\n')
        said = "multiple definition of `lltm_twice()'"
    with pytest.raises(jit.BuildError) as raised:
        jit.load(tiny)
    message = str(raised.value)
    # ninja 1.12 and later put the exit code in its FAILED row: "FAILED: [code=1] lib/..."
    assert re.match(r"lltm_jit: building the link failed:\nFAILED: (\[code=\d+\] )?lib/", message), message
    assert said in message, message
    assert jit.Cache.default().builds() == []


def test_verbose_build_output_goes_to_stderr(tiny, monkeypatch, capfd):
    """LLTM_JIT_VERBOSE shows ninja's progress on stderr: stdout is the caller's (`python -m
    lltm_jit build --cmake` prints the one line that a shell substitution takes)."""
    monkeypatch.setenv("LLTM_JIT_VERBOSE", "1")
    assert jit.load(tiny).built_now
    out, err = capfd.readouterr()
    assert out == "" and "tiny.cpp" in err and "link" in err, (out, err)


def test_a_bad_max_jobs_is_an_error_naming_it(tiny, monkeypatch):
    monkeypatch.setenv("MAX_JOBS", "abc")
    with pytest.raises(jit.BuildError, match="MAX_JOBS must be a positive number of compiles to run at once, got 'abc'"):
        jit.load(tiny)


def test_a_full_disk_while_publishing_is_the_caches_error(tiny, monkeypatch):
    """A CacheError (which the fallback covers) that names the cache and the file it was writing,
    and no staging folder left."""
    def full(source, target):  # as shutil.copyfile fails: the source first, the target second
        raise OSError(28, "No space left on device", str(source), None, str(target))

    monkeypatch.setattr(jit.core.shutil, "copyfile", full)
    with pytest.raises(jit.CacheError, match=r"cannot use the cache directory .*: No space left on device "
                                             r"\(.*\.tmp-\d+/lltm_jit_lltm_jit_tiny\.so\)"):
        jit.load(tiny)
    assert jit.Cache.default().leftovers() == []


def test_a_library_that_cannot_be_held_is_a_build_error(tiny, monkeypatch):
    """The shared hold's lock refused (NFS without its lock service): the BuildError that the
    fallback covers."""
    def refused(path):
        raise OSError(errno.ENOLCK, "No locks available", str(path))

    monkeypatch.setattr(jit.core, "hold_shared", refused)
    with pytest.raises(jit.BuildError, match=r"cannot be loaded \(\[Errno 37\] No locks available"):
        jit.load(tiny)


def test_sources_changed_and_changed_back_before_the_workspace_copies_them_are_not_cached(tiny, monkeypatch):
    """The key is taken of the sources before the lock, the workspace copies them later: if they
    change in between (V1 -> V2) and change back (-> V1) before the build ends, the library is
    of V2 and must not be published under V1's key."""
    source = tiny.src / "tiny.cpp"
    v1 = source.read_text()
    real = Workspace._mirror

    def edited_while_copied(self):
        source.write_text(v1 + "int lltm_v2() { return 2; }\n")
        try:
            return real(self)
        finally:
            source.write_text(v1)

    monkeypatch.setattr(Workspace, "_mirror", edited_while_copied)
    with pytest.warns(RuntimeWarning, match="the sources changed during the build; it is loaded but not cached"):
        build = jit.load(tiny)
    cache = jit.Cache.default()
    assert build.built_now and build.library.parent == cache.root / "loose"
    assert cache.builds() == [] and cache.library(build.key) is None
    monkeypatch.setattr(Workspace, "_mirror", real)
    again = jit.load(tiny)  # V1 itself, compiled again over V2's object
    assert again.built_now and again.library == cache.library(build.key)


def test_an_edit_in_the_objects_second_is_compiled_where_timestamps_are_whole_seconds(tiny, monkeypatch):
    """On a file system that keeps whole seconds (ext3, HFS+; FAT even seconds), an edit copied in
    the second its object was written gets that second too, and a time of 1 ns past the object's
    is rounded down to it: ninja would take the object for newer than the edit and link it."""
    first = jit.load(tiny)
    workspace = next(jit.Cache.default().root.glob("workspaces/*/"))
    # The sources and the objects dated in one second, as a whole-second file system keeps them,
    # and a past one, before the times that ninja logged for its compiles.
    second = (int(time.time()) - 100) * 10**9
    newest = second + 500_000_000  # the objects' time, as a finer-grained clock wrote it
    for path in [*workspace.glob("src/*"), *workspace.glob("gen/*")]:
        os.utime(path, ns=(second, second))
    for path in workspace.glob("obj/*"):
        os.utime(path, ns=(newest, newest))

    real_utime, real_write = os.utime, Workspace._write

    def whole_seconds(path, times=None, *, ns=None, **kwargs):
        if ns is None:
            return real_utime(path, times, **kwargs)
        return real_utime(path, ns=tuple(t // 10**9 * 10**9 for t in ns), **kwargs)

    def written_in_that_second(path, content):
        real_write(path, content)
        if path.parent.name == "src":
            real_utime(path, ns=(second, second))

    monkeypatch.setattr(jit.workspace.os, "utime", whole_seconds)
    monkeypatch.setattr(Workspace, "_write", staticmethod(written_in_that_second))
    source = tiny.src / "tiny.cpp"
    source.write_text(source.read_text() + "int lltm_edited() { return 2; }\n")
    mtimes, real_ninja = [], Workspace._run_ninja

    def ninja(self):  # as ninja sees the copy
        mtimes.append(os.stat(self.root / "src" / "tiny.cpp").st_mtime_ns)
        real_ninja(self)

    monkeypatch.setattr(Workspace, "_run_ninja", ninja)
    edited = jit.load(tiny)
    assert edited.key != first.key and edited.built_now
    assert mtimes[0] > newest
    [build] = [b for b in jit.Cache.default().builds() if b["key"] == edited.key]
    assert "tiny.cpp" in build["compiled"], build


def test_a_build_removed_before_it_loads_is_looked_for_again(tiny, monkeypatch):
    """Another process's clean-up (LLTM_JIT_KEEP_DAYS=0) may remove a build between its lookup
    and the shared hold that marks it in use: the load looks again, and builds it again."""
    first = jit.load(tiny)
    real, calls = jit.core.hold_shared, []

    def removed_first(path):
        if not calls:
            shutil.rmtree(jit.Cache.default().entry(first.key))
        calls.append(path)
        return real(path)

    monkeypatch.setattr(jit.core, "hold_shared", removed_first)
    again = jit.load(tiny)
    assert len(calls) == 2 and again.built_now and again.library.exists()


@pytest.mark.parametrize("folder", ["missing", "a file", "empty"])
def test_reload_of_a_folder_without_sources_is_a_build_error_naming_it(tmp_path, monkeypatch, folder):
    """Raised before anything is built or copied: a build of no sources registers no operators."""
    import lltm_jit

    path, reason = tmp_path / folder, {"missing": "it does not exist", "a file": "it is not a folder",
                                       "empty": "it has no .cpp file"}[folder]
    if folder == "a file":
        path.write_text("")
    elif folder == "empty":
        path.mkdir()
        (path / "lltm.h").write_text("")
    monkeypatch.setenv("LLTM_JIT_CACHE_DIR", str(tmp_path / "cache"))
    before = lltm_jit.build_info()
    with pytest.raises(jit.BuildError, match=re.escape(f"lltm_jit: no C++ sources in {path}: {reason}")):
        lltm_jit.reload(path)
    assert lltm_jit.build_info() == before and not (tmp_path / "cache").exists()


# ---------------------------------------------------------------------------------------------
# Failures before compiling (slow: a subprocess importing torch, seconds each)


@pytest.mark.slow
def test_missing_compiler(tree, tmp_path):
    result = python(tree, tmp_path / "cache", CXX="/nonexistent/c++")
    assert result.returncode != 0
    assert "the C++ compiler '/nonexistent/c++' was not found" in result.stderr
    info = command(tree, tmp_path / "cache", "info", CXX="/nonexistent/c++")  # says so before an import
    assert info.returncode == 1
    assert "not built, and the next import fails: cannot build: the C++ compiler '/nonexistent/c++'" in info.stdout
    assert "LLTM_JIT_FALLBACK=1" in result.stderr


def tool_dir(tmp_path, *tools):
    """A PATH directory holding only the named tools."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for tool in tools:
        (bin_dir / tool).symlink_to(shutil.which(tool))
    return str(bin_dir)


@pytest.mark.slow
def test_missing_ninja(tree, tmp_path):
    hide = tmp_path / "hide"
    hide.mkdir()
    (hide / "ninja.py").write_text("raise ImportError('hidden by the test')\n")
    result = python(tree, tmp_path / "cache", PATH=tool_dir(tmp_path, "c++"),
                    PYTHONPATH=f"{tree}{os.pathsep}{hide}")
    assert result.returncode != 0
    assert "ninja was not found" in result.stderr and "pip install ninja" in result.stderr


@pytest.mark.slow
def test_missing_nvcc_when_torch_has_cuda(tree, tmp_path):
    code = "import torch; torch.version.cuda = torch.version.cuda or '13.0'; import lltm_jit"
    result = python(tree, tmp_path / "cache", code, LLTM_JIT_CUDA="", TORCH_CUDA_ARCH_LIST="9.0",
                    CUDA_HOME="/nonexistent/cuda", PATH=tool_dir(tmp_path, "c++", "ninja"))
    assert result.returncode != 0
    assert "cannot build the CUDA kernels" in result.stderr
    assert "CUDA_HOME=/nonexistent/cuda has no bin/nvcc" in result.stderr
    assert "LLTM_JIT_CUDA=0" in result.stderr


@pytest.mark.slow
@pytest.mark.skipif(torch.version.cuda is not None, reason="needs a CPU-only torch")
def test_a_cuda_build_with_a_cpu_only_torch_fails_at_once(tree, tmp_path):
    result = command(tree, tmp_path / "cache", "build", "--arch", "9.0")
    assert result.returncode == 1
    assert result.stderr.startswith("lltm_jit: cannot build the CUDA kernels (sm 9.0): this torch")
    assert "built without CUDA" in result.stderr and "--cpu-only" in result.stderr
    assert "compiling" not in result.stderr  # no compiler ran


@pytest.mark.slow
def test_fallback_is_opt_in_and_announced(tree, tmp_path):
    result = run(tree, tmp_path / "cache", PROGRAMS / "loader_run_lltm.py", CXX="/nonexistent/c++",
                 LLTM_JIT_FALLBACK="1")
    assert result.returncode == 0, result.stderr
    assert "RuntimeWarning" in result.stderr and "runs the pure-PyTorch reference" in result.stderr
    assert result.stdout.split() == ["reference", "0.0"]


@pytest.mark.slow
def test_fallback_covers_an_unusable_cache(tree, tmp_path):
    cache = tmp_path / "file"
    cache.write_text("")
    result = run(tree, cache, PROGRAMS / "loader_run_lltm.py", LLTM_JIT_FALLBACK="1")
    assert result.returncode == 0, result.stderr
    assert f"cannot use the cache directory {cache}: it is not a directory" in result.stderr
    assert result.stdout.split() == ["reference", "0.0"]


@pytest.mark.slow
def test_a_read_only_cache_without_the_build_gives_one_clear_error(tree, tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    read_only(cache)
    message = (f"lltm_jit: cannot use the cache directory {cache}: it is not writable. "
               "Set LLTM_JIT_CACHE_DIR to a writable directory.")
    imported = python(tree, cache, prefix=unprivileged())
    assert imported.returncode != 0 and message in imported.stderr
    assert "PermissionError" not in imported.stderr
    built = command(tree, cache, "build", prefix=unprivileged())
    assert built.returncode == 1 and built.stderr.strip() == message
    info = command(tree, cache, "info", prefix=unprivileged())
    assert info.returncode == 1, info.stdout
    assert f"{cache} (no new builds: it is not writable)" in info.stdout
    assert "the next import fails" in info.stdout


# ---------------------------------------------------------------------------------------------
# Builds


@pytest.mark.slow
def test_cold_import_builds_and_the_next_import_reuses_it(tree, tmp_path):
    cache = tmp_path / "cache"
    first = python(tree, cache)
    assert first.returncode == 0, first.stderr
    assert "lltm_jit: compiling the C++ kernels" in first.stderr and "built in" in first.stderr
    [build] = jit.Cache(cache).builds()
    library = Path(build["directory"]) / build["library"]
    before = library.stat()

    code = ("import sys, lltm_jit; info = lltm_jit.build_info(); "
            "print(info['built_now'], info['library'], 'torch.utils.cpp_extension' in sys.modules)")
    second = python(tree, cache, code)
    assert second.returncode == 0, second.stderr
    assert second.stderr == ""  # no status line: nothing was built
    assert second.stdout.split() == ["False", str(library), "False"]  # no build machinery loaded
    after = library.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert len(entries(cache)) == 1 and leftovers(cache) == []


@pytest.mark.slow
def test_editing_a_source_rebuilds(tree, warm_cache):
    edit_a_source(tree)
    result = python(tree, warm_cache, "import lltm_jit; print(lltm_jit.build_info()['built_now'])")
    assert result.returncode == 0, result.stderr
    assert "compiling" in result.stderr and result.stdout.strip() == "True"
    assert len(entries(warm_cache)) == 2


@pytest.mark.slow
def test_killed_builds_stop_at_once_and_leave_a_usable_cache(tree, tmp_path):
    cache = tmp_path / "cache"
    kill_points = [
        # (label, ready, kill the importer's whole process group: as a shell's Ctrl-\ or a job kill)
        ("as the build starts", lambda proc: wait_for(lambda: leftovers(cache) or proc.poll() is not None), True),
        ("mid-compile, the importer alone (kill -9 PID)", lambda proc: compiling(cache, proc), False),
        ("mid-compile, the importer's process group", lambda proc: compiling(cache, proc), True),
        ("once the library is linked", lambda proc: wait_for(lambda: any(f.glob("*.so") for f in leftovers(cache)) or proc.poll() is not None), True),
    ]
    for label, ready, whole_group in kill_points:
        proc = spawn(tree, cache)
        ready(proc)
        if proc.poll() is not None:  # finished before the kill point: nothing left to test here
            pytest.fail(f"build ended before the kill point '{label}': {proc.communicate()}")
        (os.killpg if whole_group else os.kill)(proc.pid, signal.SIGKILL)
        proc.wait()
        assert_build_stops(cache)
        assert not entries(cache), label  # nothing half-built was published

    assert leftovers(cache)  # the last killed build's folder, until the next import
    result = python(tree, cache)
    assert result.returncode == 0, result.stderr
    assert "waiting for another process" not in result.stderr
    assert len(entries(cache)) == 1 and leftovers(cache) == []


@pytest.mark.slow
def test_the_next_import_removes_a_dead_build_of_another_key(tree, warm_cache):
    edit_a_source(tree)
    proc = spawn(tree, warm_cache)
    compiling(warm_cache, proc)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert_build_stops(warm_cache)
    assert leftovers(warm_cache)
    result = python(REPO, warm_cache, "import lltm_jit; print(lltm_jit.build_info()['built_now'])")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False" and leftovers(warm_cache) == []


@pytest.mark.slow
@pytest.mark.parametrize("target", ["process group", "process"])  # a shell's Ctrl-C; Jupyter's interrupt
def test_ctrl_c_mid_build_raises_keyboard_interrupt_and_stops_the_build(tree, tmp_path, target):
    cache = tmp_path / "cache"
    proc = spawn(tree, cache)
    compiling(cache, proc)
    (os.killpg if target == "process group" else os.kill)(proc.pid, signal.SIGINT)
    _, stderr = proc.communicate(timeout=TIMEOUT)
    assert stderr.rstrip().endswith("KeyboardInterrupt"), stderr
    assert "BuildError" not in stderr and "LLTM_JIT_FALLBACK" not in stderr
    assert build_processes(cache) == [], stderr  # the importer waited for them
    assert not entries(cache) and leftovers(cache) == [], stderr


@pytest.mark.slow
def test_simultaneous_cold_imports_build_once(tree, tmp_path):
    cache = tmp_path / "cache"
    procs = [subprocess.Popen([sys.executable, PROGRAMS / "loader_run_lltm.py"], env=env_for(tree, cache),
                              cwd=tree, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(4)]
    outputs = [p.communicate(timeout=TIMEOUT) for p in procs]
    assert all(p.returncode == 0 for p in procs), outputs
    for stdout, _ in outputs:
        backend, difference = stdout.split()
        assert backend == "extension" and float(difference) < 1e-5
    stderr = "".join(err for _, err in outputs)
    assert stderr.count("lltm_jit: compiling") == 1
    assert len(entries(cache)) == 1 and leftovers(cache) == []


@pytest.mark.slow
def test_damaged_library_is_rebuilt_with_a_warning(tree, warm_cache):
    [build] = jit.Cache(warm_cache).builds()
    library = Path(build["directory"]) / build["library"]
    library.write_bytes(library.read_bytes()[: library.stat().st_size // 2])
    result = python(tree, warm_cache, "import lltm_jit; print(lltm_jit.backend())")
    assert result.returncode == 0, result.stderr
    assert "is damaged" in result.stderr and "rebuilding" in result.stderr
    assert result.stdout.strip() == "extension"
    [build] = jit.Cache(warm_cache).builds()
    assert library.stat().st_size == build["size"] and leftovers(warm_cache) == []


@pytest.mark.slow
def test_compile_error_names_the_file_and_log_and_the_cache_stays_usable(tree, tmp_path):
    cache = tmp_path / "cache"
    source = jit.BuildSpec("lltm_jit", (), tree / "src").sources()[0]
    good = source.read_text()
    source.write_text(good + "\nint broken() { return undeclared_name; }\n")
    # A compiler that colours its messages, and a ninja that keeps colours in a pipe.
    colour = tmp_path / "c++"
    colour.write_text(f'#!/bin/sh\nexec {shutil.which("c++")} -fdiagnostics-color=always "$@"\n')
    colour.chmod(0o755)
    result = python(tree, cache, CXX=colour, CLICOLOR_FORCE="1")
    assert result.returncode != 0
    excerpt = result.stderr.split(f"building {source} failed:\n")[1].split("\nFull build log: ")[0]
    assert excerpt.startswith("FAILED: ") and f"{source.name}.o" in excerpt.splitlines()[0]
    assert "error" in excerpt and "undeclared_name" in excerpt
    assert f"{source}:" in excerpt  # the edited file's own path, not the workspace's copy of it
    assert not any(row.startswith("[") for row in excerpt.splitlines())  # no other build step
    assert "\x1b" not in excerpt
    log = Path(result.stderr.split("Full build log: ")[1].split()[0])
    assert log.is_file() and "undeclared_name" in log.read_text() and "\x1b" not in log.read_text()
    assert not entries(cache) and leftovers(cache) == []
    assert not list(cache.glob("*.lock"))  # no lock outlives the failed build

    source.write_text(good)
    result = python(tree, cache)
    assert result.returncode == 0, result.stderr
    assert "waiting" not in result.stderr and len(entries(cache)) == 1


@pytest.mark.slow
def test_reload_uses_the_edited_sources(tree, warm_cache):
    result = run(tree, warm_cache, PROGRAMS / "loader_reload.py", tree / "src")
    assert result.returncode == 0, result.stderr
    before, built, after, correct, stable = result.stdout.strip().splitlines()
    assert before.startswith("lltm: input must have 2 dimensions"), before
    namespace, built_now, built_now_again = built.split()
    assert namespace.startswith("lltm_jit_") and built_now == "True"
    assert built_now_again == "False"  # a second reload of the same sources builds nothing
    assert after == before.replace("lltm: ", "lltm (edited): ", 1)
    assert correct == "True" and stable == "True True"


@pytest.mark.slow
def test_import_leaves_cuda_uninitialised_for_forked_workers(warm_cache):
    result = run(REPO, warm_cache, PROGRAMS / "loader_fork_workers.py", LLTM_JIT_CUDA="")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:2] == ["False", "[(3, 5), (3, 5)]"]


@pytest.mark.slow
def test_command_line(tree, warm_cache, tmp_path):
    empty = tmp_path / "empty"
    info = run(tree, empty, "-mlltm_jit", "info")
    assert info.returncode == 0, info.stderr
    assert "not built yet" in info.stdout and str(empty) in info.stdout
    assert "compiling" not in info.stderr  # `python -m lltm_jit` does not build on import
    info = command(tree, warm_cache, "info")
    # The compile that finished last, as the build recorded it: on two cores ops.cpp or the chain
    # of the other files, whichever the machine's load made the longer.
    [build] = jit.Cache(warm_cache).builds()
    last = max((name for name in build["compiled"] if name != "link"), key=lambda name: build["compiled"][name][1])
    assert info.returncode == 0 and "built in" in info.stdout and f"critical path: {last} " in info.stdout
    assert "compiled (start-end s): ops.cpp 0.0-" in info.stdout and "reused: nothing" in info.stdout
    assert f"from {REPO / 'src'} in {warm_cache}" in info.stdout and "last used 20" in info.stdout  # built_cache's

    built = command(tree, warm_cache, "build", "--cpu-only")
    assert built.returncode == 0 and built.stdout.startswith("already built: ")
    cleaned = command(tree, warm_cache, "clean")
    assert cleaned.returncode == 0 and "removed" in cleaned.stdout
    assert list(warm_cache.iterdir()) == []  # the lock files too


@pytest.mark.slow
def test_a_read_only_cache_with_the_build_loads_it(tree, warm_cache):
    cache = jit.Cache(warm_cache)
    fake_build(cache, "d" * 24, publish=False)  # left by a dead process; sweeping it cannot work
    read_only(warm_cache)
    result = python(tree, warm_cache, "import lltm_jit; print(lltm_jit.backend())", prefix=unprivileged())
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "extension" and result.stderr == ""
    info = command(tree, warm_cache, "info", prefix=unprivileged())
    assert info.returncode == 0 and "(no new builds: it is not writable)" in info.stdout
    cleaned = command(tree, warm_cache, "clean", prefix=unprivileged())
    assert cleaned.returncode == 1
    assert cleaned.stderr.startswith(f"lltm_jit: cannot use the cache directory {warm_cache}: it is not writable")
    assert len(entries(warm_cache)) == 1


@pytest.mark.slow
def test_installed_wheel_finds_its_sources(tmp_path, warm_cache):
    """`pip install .` ships src/ as lltm_jit/csrc; the installed package builds from there."""
    pytest.importorskip("setuptools")  # built without isolation: the GPU machine has no network
    project, target = tmp_path / "project", tmp_path / "site"
    project.mkdir()
    for name in ["pyproject.toml", "README.md"]:  # a copy: setuptools leaves a build/ folder behind
        shutil.copy(REPO / name, project)
    for name in ["lltm_jit", "src"]:
        shutil.copytree(REPO / name, project / name, ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                    "--target", str(target), str(project)], check=True, capture_output=True, timeout=TIMEOUT)
    code = "import lltm_jit; print(lltm_jit.jit.source_dir(), lltm_jit.build_info()['built_now'])"
    result = python(target, warm_cache, code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [str(target / "lltm_jit" / "csrc"), "False"]  # same sources, same key


# ---------------------------------------------------------------------------------------------
# The workspace: objects reused across builds, never a stale one


def last_build(cache, result):
    """The manifest of the build whose key `result` printed last."""
    key = result.stdout.split()[-1]
    return next(b for b in jit.Cache(cache).builds() if b["key"] == key)


def compiled_sources(build):
    """The sources a build compiled (not the generated namespace file, not the link)."""
    return sorted(name for name in build["compiled"] if name != "link" and not name.startswith("namespace-"))


def dependents(src, header):
    """The sources that include `header`, directly or through other headers of `src`."""
    def includes(path, seen):
        for name in re.findall(r'^#include "([^"]+)"', path.read_text(), re.M):
            if name not in seen and (src / name).is_file():
                seen.add(name)
                includes(src / name, seen)
        return seen
    spec = jit.BuildSpec("lltm_jit", (), src)
    return sorted(p.name for p in spec.sources() if header in includes(p, set()))


def test_kernel_files_include_no_torch_header():
    """The build's budget: the kernel files (every .cu, and the CPU's plain C++ rows, cpu_*.cpp)
    compile without torch's headers, which cost a file more than its kernels do
    (benchmarks/NOTES.md, "The build"). Asked as the loader asks it to order a cold build."""
    src = REPO / "src"
    kernel_files = sorted(src.glob("*.cu")) + sorted(src.glob("cpu_*.cpp"))
    assert len(kernel_files) > 20
    assert [path.name for path in kernel_files if _includes(path, "ATen|c10|torch")] == []


KEY = "import lltm_jit; print(lltm_jit.build_info()['key'])"


@pytest.mark.slow
@pytest.mark.parametrize("edited", ["sequence_cpu.cpp", "cell_cpu.h"])
def test_an_edit_recompiles_what_it_affects_and_nothing_else(tree, warm_cache, edited):
    path = tree / "src" / edited
    path.write_text(path.read_text() + "\n// an edit\n")
    result = python(tree, warm_cache, KEY)
    assert result.returncode == 0, result.stderr
    build = last_build(warm_cache, result)
    expected = [edited] if edited.endswith(".cpp") else dependents(tree / "src", edited)
    assert expected and len(expected) < len(build["sources"])
    assert compiled_sources(build) == expected
    reused = [name for name in build["reused"] if not name.startswith("namespace-")]
    assert sorted(reused) == sorted(set(build["sources"]) - set(expected))


@pytest.mark.slow
def test_a_build_killed_mid_compile_leaves_nothing_that_a_later_build_reuses(tree, warm_cache):
    # Every file is edited, so that every one is being compiled when the build is killed.
    spec = jit.BuildSpec("lltm_jit", (), tree / "src")
    for source in spec.sources():
        source.write_text(source.read_text() + "\n// an edit\n")
    proc = spawn(tree, warm_cache)
    compiling(warm_cache, proc)
    time.sleep(0.5)  # the compilers have written part of their objects
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert_build_stops(warm_cache)
    result = python(tree, warm_cache, KEY)
    assert result.returncode == 0, result.stderr
    assert compiled_sources(last_build(warm_cache, result)) == sorted(p.name for p in spec.sources())


@pytest.mark.slow
def test_two_processes_building_different_copies_at_once_do_not_mix_objects(tree, warm_cache, tmp_path):
    """Each copy's edit shows in its own error message: a process that linked an object of the other
    copy would print the other's."""
    trees = [tree, tmp_path / "tree2"]
    shutil.copytree(tree, trees[1])
    for number, root in enumerate(trees):
        checks = root / "src" / "checks.h"
        checks.write_text(checks.read_text().replace('" must have "', f'" (copy {number}) must have "'))
    code = ("import lltm_jit, torch\n"
            "try:\n    lltm_jit.lltm(torch.randn(3), *[torch.randn(2, 2)] * 4)\n"
            "except RuntimeError as error:\n    print(str(error).splitlines()[0])")
    procs = [subprocess.Popen([sys.executable, "-c", code], env=env_for(root, warm_cache), cwd=root,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for root in trees]
    outputs = [p.communicate(timeout=TIMEOUT) for p in procs]
    assert all(p.returncode == 0 for p in procs), outputs
    for number, (stdout, _) in enumerate(outputs):
        assert stdout.startswith(f"lltm: input (copy {number}) must have 2 dimensions"), outputs
    assert len(entries(warm_cache)) == 3


def test_a_changed_flag_compiler_or_torch_gets_a_workspace_of_its_own(tmp_path, monkeypatch):
    """Objects are shared only between builds whose every object would come out the same."""
    cache = jit.Cache(tmp_path)
    spec = jit.BuildSpec("lltm_jit", (), jit.source_dir())
    tools = jit.env.check_tools(())
    name = Workspace(cache, spec, tools).name
    assert Workspace(cache, jit.BuildSpec("lltm_jit_other", (), tmp_path), tools).name == name  # nor sources
    changes = [(jit.spec, "CXX_FLAGS", (*jit.spec.CXX_FLAGS, "-g")), (torch, "__version__", "9.9.9"),
               (torch.version, "git_version", "0" * 40)]
    for target, attribute, value in changes:
        with monkeypatch.context() as m:
            m.setattr(target, attribute, value)
            assert Workspace(cache, spec, tools).name != name, attribute
    assert Workspace(cache, spec, {**tools, "cxx": shutil.which("true")}).name != name  # another compiler


# ---------------------------------------------------------------------------------------------
# Trust: nothing that someone else could have written is loaded


def test_a_cache_directory_that_others_can_write_is_refused(tmp_path, monkeypatch):
    root = tmp_path / "shared"
    root.mkdir()
    root.chmod(0o777)
    monkeypatch.setenv("LLTM_JIT_CACHE_DIR", str(root))
    with pytest.raises(jit.CacheError, match=f"refusing the cache directory: {root} is writable by its group or"):
        jit.load(jit.BuildSpec.current("lltm_jit_never_built"))


@pytest.mark.parametrize("path", ["lib", "obj/tiny.cpp.o"])
def test_a_workspace_file_or_folder_that_others_can_write_is_refused(tiny, path):
    """An object or a library that someone else could have planted would be taken for up to date,
    linked and published."""
    jit.load(tiny)
    [workspace] = jit.Cache.default().root.glob("workspaces/*/")
    (workspace / path).chmod((workspace / path).stat().st_mode | 0o002)
    other = jit.BuildSpec(tiny.namespace + "_other", (), tiny.src)  # a new key, in the same workspace
    message = f"refusing the workspace {workspace}: {workspace / path} is writable by its group or by others"
    with pytest.raises(jit.CacheError, match=re.escape(message)):
        jit.load(other)
    assert [b["namespace"] for b in jit.Cache.default().builds()] == [tiny.namespace]


def test_a_killed_writes_leftover_does_not_stop_the_next_build(tiny):
    """A build killed between writing a source copy (under a umask of 002) and taking its group's
    write permission leaves a `.tmp` that no build reads: the next build removes it, not refuses."""
    jit.load(tiny)
    [workspace] = jit.Cache.default().root.glob("workspaces/*/")
    for leftover in (workspace / "src" / "tiny.cpp.tmp", workspace / "gen" / "namespace-x.cpp.tmp"):
        leftover.write_text("partial")
        leftover.chmod(0o664)
    jit.load(jit.BuildSpec(tiny.namespace + "_other", (), tiny.src))  # a new key, in the same workspace
    assert not list(workspace.glob("*/*.tmp"))


@pytest.mark.parametrize("refused", ["directory", "build"])
def test_info_exits_1_where_the_import_refuses_this_setups_build(tmp_path, monkeypatch, capsys, refused):
    """A cache directory, or this setup's build in it, that others can write: the import refuses
    it (`info` says so and exits 1), even where the build is there."""
    from lltm_jit.__main__ import main

    root = tmp_path / "shared"
    monkeypatch.setenv("LLTM_JIT_CACHE_DIR", str(root))
    cache, key = jit.Cache(root), jit.BuildSpec.current("lltm_jit").key()
    fake_build(cache, key, publish=True)
    writable = root if refused == "directory" else cache.entry(key)
    writable.chmod(0o775)
    assert main(["info"]) == 1
    out = capsys.readouterr().out
    said = {"directory": "refusing the cache directory", "build": "refusing the cached build"}[refused]
    assert f"the next import fails: {said}" in out, out
    assert f"{writable} is writable by its group" in out, out
    assert "built in" not in out


@pytest.mark.parametrize("change", ["group-writable", "another owner"])
def test_a_cached_build_that_others_could_have_written_is_refused(tmp_path, change):
    cache = jit.Cache(tmp_path / "cache")
    key = "a" * 24
    fake_build(cache, key, publish=True)
    library = cache.entry(key) / "library.so"
    if change == "group-writable":
        library.chmod(0o664)
    elif os.geteuid() == 0:
        os.chown(library, 65534, 65534)
    else:
        pytest.skip("only root can give a file to another user")
    with pytest.raises(jit.CacheError, match=f"refusing the cached build {cache.entry(key)}: {library} is"):
        cache.library(key)
