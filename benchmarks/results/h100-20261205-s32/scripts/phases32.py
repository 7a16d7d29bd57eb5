"""Session 32: session 30's timers (../../h200-20261205-s30/scripts/phases30.py) on a tree
(argv[1]), plus, as a "PHW" line, how long thread 0 waits for the step's inputs from memory: in the
forward, from the update's start until its first input projection is in its register (so the
"sums" timer no longer holds that wait); in the backward, from the step's start until its first
pre-activation is."""
import subprocess
import sys
from pathlib import Path

tree = Path(sys.argv[1])
here = Path(__file__).resolve().parent
# Session 29's patches anchor at the forward's `cells.load(p, t + 1, S)`, which the tree with the
# inputs read two steps ahead calls `cells.advance(p, t, S)`: named so for them, then back.
forward = tree / "src/tensor_core_forward.cuh"
ADVANCE, LOAD = "cells.advance(p, t, S);", "cells.load(p, t + 1, S);"
advance = ADVANCE in forward.read_text()
if advance:
    forward.write_text(forward.read_text().replace(ADVANCE, LOAD))
subprocess.run([sys.executable, str(here.parent.parent / "h200-20261205-s30/scripts/phases30.py"), str(tree)], check=True)
if advance:
    forward.write_text(forward.read_text().replace(LOAD, ADVANCE))


def patch(name, edits):
    path = tree / "src" / name
    text = path.read_text()
    for old, new in edits:
        assert text.count(old) == 1, (name, old)
        text = text.replace(old, new)
    path.write_text(text)


patch("tensor_core_forward.cuh", [
    ("unsigned long long ph_[13]", "unsigned long long ph_[14]"),
    ("    PH(2);\n", "    PH(2);\n    if (ph_on_ && cells.x[0][0].x != 0x7bcdu) ph_[13] += clock64() - tp_;\n"),
    ("  PH_PRINT(\"fwd\", 0);\n",
     "  PH_PRINT(\"fwd\", 0);\n  if (ph_on_) printf(\"PHW fwd blk=%u steps=%lld: xwait=%llu\\n\", linear_block(), (long long)p.time, ph_[13]);\n"),
])
patch("tensor_core_backward.cuh", [
    ("unsigned long long ph_[9]", "unsigned long long ph_[10]"),
    ("    PH(0);\n    cells.step(",
     "    PH(0);\n    if (ph_on_ && cells.in[0].z[0] != 1234.5f) ph_[9] += clock64() - tp_;\n    cells.step("),
    ("  PH_PRINT(\"bwd\", 0);\n",
     "  PH_PRINT(\"bwd\", 0);\n  if (ph_on_) printf(\"PHW bwd blk=%u steps=%lld: inwait=%llu\\n\", linear_block(), (long long)p.time, ph_[9]);\n"),
])
print("wait timers patched")
