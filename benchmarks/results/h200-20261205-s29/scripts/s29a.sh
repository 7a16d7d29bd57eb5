#!/usr/bin/env bash
# Session 29's first call, on main (34dc84f): (1) where a tensor-core step's cycles go, by phase
# (phases.py's clock64 timers in a patched copy; the float16 rows over their bar and two met
# bfloat16 ones); (2) the product's B fragments by ldmatrix and its loop unrolled further
# (variants.py), against main with benchmarks.ab, and the sequence tests on CUDA on the variant
# with both.
set -uo pipefail
export PYTHONUNBUFFERED=1
ROOT=$PWD; S=$ROOT/benchmarks/results/h200-20261205-s29/scripts
bash benchmarks/device_env.sh > $OUT/a-env.txt 2>&1
rm -rf /tmp/ph /tmp/var && mkdir /tmp/ph && cp -r lltm_jit src /tmp/ph/ && python3 $S/phases.py /tmp/ph
python3 $S/variants.py /tmp/var $ROOT
(cd /tmp/ph && PYTHONPATH=/tmp/ph LLTM_JIT_CACHE_DIR=/tmp/ph-cache python3 -m lltm_jit build 2>&1 | grep "built in") &
(cd /tmp/var/both && PYTHONPATH=/tmp/var/both LLTM_JIT_CACHE_DIR=/tmp/both-cache python3 -m lltm_jit build 2>&1 | grep "built in") &
wait
(cd /tmp/ph && PYTHONPATH=/tmp/ph LLTM_JIT_CACHE_DIR=/tmp/ph-cache timeout 120 python3 $S/phases_run.py \
  8x256x512:float16:256 64x1024x1024:float16:64 16x512x1024:float16:64 128x512x512:float16:64 \
  8x128x256:float16:64 64x256x512:bfloat16:64 1024x256x256:bfloat16:64) > $OUT/a-phases-raw.txt 2>&1
echo "phases rc=$?"
python3 $S/phases_table.py $OUT/a-phases-raw.txt > $OUT/a-phases.txt 2>&1
cp -r tests /tmp/var/both/ && cp pyproject.toml /tmp/var/both/
(cd /tmp/var/both && PYTHONPATH=/tmp/var/both LLTM_JIT_CACHE_DIR=/tmp/both-cache timeout 200 python3 -m pytest -q -x \
  -n 8 tests/test_sequence.py -k "cuda" -p no:cacheprovider 2>&1 | tail -5) > $OUT/a-tests-both.txt
tail -2 $OUT/a-tests-both.txt
PYTHONPATH=$ROOT timeout 330 python3 -m benchmarks.ab --base /tmp/var/unroll --base /tmp/var/ldsm --base /tmp/var/both \
  --rounds 2 --sizes 8x256x512:float16,64x1024x1024:float16,16x512x1024:float16,128x512x512:float16,8x128x256:float16,64x256x512:bfloat16,1024x256x256:bfloat16,32x8x1400:bfloat16 \
  > $OUT/a-ab.txt 2>&1
echo "ab rc=$?"
python3 - <<'PY'
import collections, os, re
d = collections.defaultdict(list)
for line in open(os.path.join(os.environ["OUT"], "a-ab.txt")):
    m = re.match(r"^(base\d|new)\s+(\S+)\s+(fwd\+bwd|fwd)\s+([\d.]+) us", line)
    if m:
        d[(m.group(2), m.group(3), m.group(1))].append(float(m.group(4)))
variants = ["new", "base0", "base1", "base2"]
print(f"{'size':26s} {'kind':8s} {'main':>9s} {'unroll':>9s} {'ldsm':>9s} {'both':>9s}  (min us)")
for s, kind in dict.fromkeys((k[0], k[1]) for k in d):
    print(f"{s:26s} {kind:8s} " + " ".join(f"{min(d[(s, kind, v)]):9.1f}" if d[(s, kind, v)] else f"{'-':>9s}" for v in variants))
PY
cat $OUT/a-phases.txt
