#!/usr/bin/env bash
# Session 28's fifth call, on main (f7b7956): whether the tensor-core kernels' choice of clusters
# is the fastest at the float16 rows over their bar (cuDNN's persistent range) and two bfloat16
# ones: the tree as it chooses, and with LLTM_JIT_CLUSTERS capping clusters at 0 (none: no shared
# gather either), 2, 4 and 8 blocks. T = 64 (ab.py's), two rounds.
set -uo pipefail
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
bash benchmarks/device_env.sh > $OUT/f-env.txt 2>&1
timeout 500 python3 -m benchmarks.ab --base HEAD --rounds 2 --env LLTM_JIT_CLUSTERS=0 --env LLTM_JIT_CLUSTERS=2 \
  --env LLTM_JIT_CLUSTERS=4 --env LLTM_JIT_CLUSTERS=8 \
  --sizes 64x1024x1024:float16,8x256x512:float16,16x512x1024:float16,8x128x256:float16,32x256x256:float16,128x1024x1024:bfloat16,64x256x512:bfloat16 \
  > $OUT/f-ab.txt 2>&1
echo "ab rc=$?"
python3 - <<'PY'
import collections, os, re
d = collections.defaultdict(list)
for line in open(os.path.join(os.environ["OUT"], "f-ab.txt")):
    m = re.match(r"^(base|new)\s+(LLTM_JIT_CLUSTERS=\d+\s+)?(\S+)\s+(fwd\+bwd|fwd)\s+([\d.]+) us", line)
    if m:
        d[(m.group(3), m.group(4), (m.group(2) or m.group(1)).strip())].append(float(m.group(5)))
variants = ["base", "new"] + [f"LLTM_JIT_CLUSTERS={n}" for n in (0, 2, 4, 8)]
print(f"{'size':26s} {'kind':8s} " + " ".join(f"{v[-10:]:>10s}" for v in variants))
for s, kind in dict.fromkeys((k[0], k[1]) for k in d):
    print(f"{s:26s} {kind:8s} " + " ".join(f"{min(d[(s, kind, v)]):10.1f}" if d[(s, kind, v)] else f"{'-':>10s}" for v in variants))
PY
