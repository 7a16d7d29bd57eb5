"""bench.py's --plan cudnn report as one line per row: ours, cuDNN's, ours / cuDNN's (us).

    python3 benchmarks/results/h200-20261203-s21/scripts/table.py b-plan-cudnn.txt
"""
import re
import sys

head, times = None, {}
for line in open(sys.argv[1]):
    if re.match(r"^\S.* T=\d+ .*(fwd|fwd\+bwd)", line):
        head, times = line.split(":")[0].strip(), {}
    elif head and re.match(r"^  (lltm_jit|lstm) ", line):
        name, us = line.split()[:2]
        times[name] = float(us)
        if len(times) == 2:
            print(f"{head:45} {times['lltm_jit']:9.1f} {times['lstm']:9.1f} {times['lltm_jit'] / times['lstm']:6.2f}")
