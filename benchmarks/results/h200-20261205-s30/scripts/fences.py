"""Session 30: a variant tree of the forward's exchange through L2 for benchmarks.ab, a copy of
the tree (argv[2]) patched into argv[1]/nofences: the bulk gather without either of its fences
(fence.proxy.async.global and, sharing the gather, fence.proxy.async.shared::cluster) and none in
their place. Not a candidate (the copies may then read h stale or overwrite an operand still
read): it bounds what the two fences cost. cuobjdump -sass of main's forward has the first as
FENCE.VIEW.ASYNC.G alone and the second as MEMBAR.ALL.CTA; MEMBAR.ALL.GPU; FENCE.VIEW.ASYNC.S."""
import re
import shutil
import sys
from pathlib import Path

out, tree = Path(sys.argv[1]), Path(sys.argv[2])
dest = out / "nofences"
shutil.rmtree(dest, ignore_errors=True)
for part in ("lltm_jit", "src"):
    shutil.copytree(tree / part, dest / part, ignore=shutil.ignore_patterns("__pycache__"))
path = dest / "src" / "tensor_core.cuh"
text = path.read_text()
for fence in ("global", "shared::cta", "shared::cluster"):
    text, n = re.subn(rf'^ *asm volatile\("fence\.proxy\.async\.{fence};" ::: "memory"\);\n', "", text, flags=re.M)
    assert n == 1, fence
path.write_text(text)
print("variant in", dest)
