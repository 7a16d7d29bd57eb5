#!/usr/bin/env bash
# The whole GPU job in one call: environment, cold build from an empty cache (with per-file
# compile times), warm import overhead, the tests, a kernel profile of the largest bfloat16 step,
# the host's cost of a small float32 step's parts (host_costs.py), then bench.py twice: eager
# timing (what a training loop sees) and CUDA graph replays (device time alone). Logs and results
# go to $OUT.
#   OUT=/tmp/out TESTS="tests" bash benchmarks/device_run.sh [bench.py args for both runs]
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 LLTM_JIT_CACHE_DIR=$(mktemp -d)
log="$OUT/setup.txt"

{
  date -u +%Y-%m-%dT%H:%M:%SZ
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv
  python3 -c "import torch; print('torch', torch.__version__, 'CUDA', torch.version.cuda, 'cuDNN', torch.backends.cudnn.version())"
  nvcc --version | tail -2
  echo "cores: $(nproc)"
  echo "== cold import (empty cache)"
  python3 - <<'PY'
import subprocess, sys, time
start = time.perf_counter()
subprocess.run([sys.executable, "-c", "import lltm_jit; print(lltm_jit.build_info())"], check=True)
print(f"cold import wall: {time.perf_counter() - start:.1f} s")
PY
  [ $? -eq 0 ] || { echo "cold import failed: nothing else to run"; exit 1; }
  python3 -m lltm_jit info  # its "built in" line has each file's compile times
  python3 - <<'PY'
import statistics, subprocess, sys
code = ("import time; t0 = time.perf_counter(); import torch; t1 = time.perf_counter(); "
        "import lltm_jit; t2 = time.perf_counter(); "
        "print(t1 - t0, t2 - t1, torch.cuda.is_initialized())")
runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
        for _ in range(3)]
print(f"warm: import torch {statistics.median(float(r[0]) for r in runs):.3f} s, "
      f"import lltm_jit over it {statistics.median(float(r[1]) for r in runs) * 1000:.1f} ms (median of 3), "
      f"CUDA initialised by the import: {runs[0][2]}")
PY
  echo "== tests: ${TESTS:=tests}"
  python3 -m pytest $TESTS -q -rs
} >"$log" 2>&1
grep -E "built in|cold import|warm:|passed|failed" "$log"

python3 benchmarks/profile_step.py >"$OUT/profile.txt" 2>&1
for size in 16x32x128 256x512x1024; do python3 benchmarks/host_costs.py --size $size; done >>"$OUT/profile.txt" 2>&1
echo "== bench.py (eager timing)"
# Its stderr (a progress bar, or a traceback) at the end of setup.txt: the device tool brings
# back at most 8 files.
python3 bench.py --out "$OUT" "$@" 2>>"$log" | tee "$OUT/bench.txt"
echo "== bench.py --graphs (device time)"
python3 bench.py --graphs --out "$OUT" "$@" 2>/dev/null | tee "$OUT/bench-graphs.txt"
echo "== summary"
grep -E "built in|cold import|warm:|passed|failed" "$log"
grep -E "total$" "$OUT/profile.txt"
