#!/usr/bin/env bash
# Session 29's third call. s29c.sh kept both changes (c-ab-table.txt); its phases had the held
# forward's update at ~1750 cycles a step for 8 splits: each split's partial sum loaded after the
# add before it. The tree adds them four loads at a time (sum4.patch); the base is the tree
# without it. (1) benchmarks.ab, two rounds; (2) the faster of the two by the forwards' sum is
# the one tested (the CUDA tests of the sequence op, autocast, LSTM parity) and (3) run through
# bench.py's cuDNN plan.
set -uo pipefail
export PYTHONUNBUFFERED=1
ROOT=$PWD; S=$ROOT/benchmarks/results/h200-20261205-s29/scripts
bash benchmarks/device_env.sh > $OUT/d-env.txt 2>&1
rm -rf /tmp/held && cp -r $ROOT /tmp/held && (cd /tmp/held && patch -s -R -p1 < $S/sum4.patch) || exit 1
grep -c add_splits /tmp/held/src/tensor_core.cuh src/tensor_core.cuh
PYTHONPATH=$ROOT timeout 240 python3 -m benchmarks.ab --base /tmp/held --rounds 2 \
  --sizes 8x256x512:float16,8x128x256:float16,32x256x256:float16,64x1024x1024:float16,128x512x512:float16,16x512x1024:float16,64x256x512:bfloat16,1024x256x256:bfloat16 \
  > $OUT/d-ab.txt 2>&1
echo "ab rc=$?"
CHOSEN=$(python3 - <<'PY'
import collections, os, re
d = collections.defaultdict(list)
for line in open(os.path.join(os.environ["OUT"], "d-ab.txt")):
    m = re.match(r"^(base|new)\s+(\S+)\s+(fwd\+bwd|fwd)\s+([\d.]+) us", line)
    if m:
        d[(m.group(2), m.group(3), m.group(1))].append(float(m.group(4)))
with open(os.path.join(os.environ["OUT"], "d-ab-table.txt"), "w") as f:
    print(f"{'size':24s} {'kind':8s} {'held (base)':>17s} {'+ sum4 (tree)':>17s}  min ratio", file=f)
    for s, kind in dict.fromkeys((k[0], k[1]) for k in d):
        a, b = d[(s, kind, "base")], d[(s, kind, "new")]
        print(f"{s:24s} {kind:8s} {' '.join(f'{v:8.1f}' for v in a):>17s} {' '.join(f'{v:8.1f}' for v in b):>17s}  {min(b) / min(a):.3f}", file=f)
fwd = [min(d[(s, k, "new")]) / min(d[(s, k, "base")]) for s, k, v in d if k == "fwd" and v == "new"]
print("tree" if sum(fwd) < len(fwd) else "held")
PY
)
cat $OUT/d-ab-table.txt; echo "chosen: $CHOSEN"
T=$ROOT; [ "$CHOSEN" = held ] && T=/tmp/held
cd $T && export PYTHONPATH=$T
timeout 200 python3 -m pytest -q -n 12 -p no:cacheprovider tests/test_sequence.py tests/test_amp.py tests/test_lstm_parity.py \
  -k "not cpu" > $OUT/d-tests.txt 2>&1
echo "tests rc=$?"; tail -2 $OUT/d-tests.txt
timeout 200 python3 bench.py --plan cudnn --budget 0.5 --out $OUT > $OUT/d-plan-cudnn.txt 2>&1
echo "plan rc=$?"
grep -E "^bars:|^  OVER|met" $OUT/d-plan-cudnn.txt | head -30
rm -f $OUT/*.png
