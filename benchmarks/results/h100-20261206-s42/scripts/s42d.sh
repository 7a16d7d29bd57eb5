#!/usr/bin/env bash
# Session 42, call d: why the wgmma product (wgmma.patch, the branch issue21-streamed-wgmma) is
# slower than the mma.sync one (main, aaaf480) at 256x512x1024 bf16 (call c: 890-906 us forward
# against 725-737). wgmma-probe.patch adds clock64 sums of a step's phases to it, written by each
# block's thread 0 over gates[0] (which no block reads or writes by then) and read back here;
# benchmarks.ab of main against wgmma.patch, alternated.
set -uo pipefail
export PYTHONUNBUFFERED=1
ROOT=$PWD; HERE=$ROOT/benchmarks/results/h100-20261206-s42/scripts
bash benchmarks/device_env.sh > $OUT/d-env.txt 2>&1; head -2 $OUT/d-env.txt
for t in wgmma wgmmaprobe; do rm -rf /tmp/$t; mkdir /tmp/$t; cp -r lltm_jit src tests benchmarks pyproject.toml /tmp/$t/
  (cd /tmp/$t && patch -s -p1 < $HERE/wgmma.patch) || exit 1; done
(cd /tmp/wgmmaprobe && patch -s -p1 < $HERE/wgmma-probe.patch) || exit 1
(cd /tmp/wgmmaprobe && PYTHONPATH=/tmp/wgmmaprobe LLTM_JIT_CACHE_DIR=/tmp/cache-wp timeout 100 python3 - <<'PY'
import torch
import lltm_jit  # noqa: F401
s, f, b = 1024, 512, 256
x = torch.randn(64, b, f, device="cuda", dtype=torch.bfloat16)
w = torch.randn(3 * s, s + f, device="cuda", dtype=torch.bfloat16) * (s + f) ** -0.5
bias = torch.zeros(3 * s, device="cuda", dtype=torch.bfloat16)
for _ in range(2):
    out = torch.ops.lltm_jit.sequence_forward(x, w, bias, None, None, None, True)
    torch.cuda.synchronize()
counters = out[3].reshape(-1).view(torch.int64)[:128 * 8].view(128, 8).cpu()
names = ["wgmma", "wait", "chunk-waits", "issue+mma", "drain", "epilogue", "tail", "steps"]
for blk in (0, 17, 127):
    c = counters[blk]
    print(f"block {blk}: wgmma {int(c[0])}, per step cycles: " +
          ", ".join(f"{n} {int(v) // int(c[7])}" for n, v in zip(names[1:7], c[1:7])))
PY
) > $OUT/d-probe.txt 2>&1; echo "probe rc=$?"; tail -4 $OUT/d-probe.txt
export PYTHONPATH=$ROOT
timeout 150 python3 -m benchmarks.ab --base . --base /tmp/wgmma --rounds 2 --sizes 256x512x1024:bfloat16 > $OUT/d-ab.txt 2>&1
echo "ab rc=$?"; sed -n '/^size/,$p' $OUT/d-ab.txt
