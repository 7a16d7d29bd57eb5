"""ninja for one build of lltm_jit, tied to the process that asked for the build.

The workspace (workspace.py) runs ninja as

    python -I -S ninja_guard.py IMPORTER_PID BUILD_DIR NINJA [ninja's arguments]

so that no compiler outlives the importer, however it ends:

- This process gets SIGTERM when the importer dies, even by SIGKILL (Linux's PR_SET_PDEATHSIG).
- ninja runs in a session of its own, so a Ctrl-C or a kill of the importer's process group
  reaches it only through this process; and it gets SIGTERM when this process dies, even by
  SIGKILL.
- SIGINT, SIGTERM or SIGHUP here become SIGTERM to ninja, which stops its compilers and exits;
  this process then exits with STOPPED, so that a stopped build never reads as a failed one.
- ninja's output goes to this process's stdout and to BUILD_DIR/build.log.
- ninja and its compilers write their files with a umask of 022, so that the cache's trust
  checks (cache.py) never meet a group-writable object or library.
- BUILD_DIR/.running stays locked (a shared flock) while ninja or any of its compilers runs: each
  of them holds it open. The loader takes it exclusively to wait until they are all gone.

Standard library only: it runs with -I -S, so it starts in milliseconds.
"""

import ctypes
import fcntl
import os
import signal
import subprocess
import sys

PR_SET_PDEATHSIG = 1
STOPPED = 128 + signal.SIGINT  # the exit status of a build stopped by a signal, as a shell's


def die_with_parent(parent: int) -> None:
    """Get SIGTERM when `parent` dies; if it already has, stop now."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent:
        os.kill(os.getpid(), signal.SIGTERM)


def main(importer: str, build_dir: str, ninja: str, *args: str) -> int:
    die_with_parent(int(importer))
    running = os.open(os.path.join(build_dir, ".running"), os.O_RDONLY | os.O_CREAT, 0o644)
    fcntl.flock(running, fcntl.LOCK_SH)

    build = None
    stopping = False

    def stop(signum, frame):
        nonlocal stopping
        stopping = True
        if build is not None:
            try:
                os.killpg(build.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, stop)
    guard = os.getpid()

    def prepare_ninja():
        # ninja may print after this process died (and its pipe with it): an ignored SIGPIPE lets
        # it go on to stop its compilers rather than die at the write.
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)
        os.umask(0o022)
        die_with_parent(guard)

    build = subprocess.Popen([ninja, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             start_new_session=True, pass_fds=(running,), preexec_fn=prepare_ninja)
    if stopping:  # a signal came before ninja existed
        stop(None, None)
    echo = True
    with open(os.path.join(build_dir, "build.log"), "ab") as log:
        for chunk in iter(lambda: os.read(build.stdout.fileno(), 1 << 16), b""):
            log.write(chunk)
            log.flush()
            if echo:
                try:
                    os.write(sys.stdout.fileno(), chunk)
                except OSError:  # the importer is gone; keep the log going
                    echo = False
    code = build.wait()
    if stopping:
        return STOPPED
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
