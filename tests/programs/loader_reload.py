"""Edit the sources lltm_jit was imported from (the folder argv[1]: the op's name in its error
messages, "lltm", becomes "lltm (edited)"), reload, and print, one per line: an error message
before the edit, the reloaded build's namespace, its built_now and that of a second reload, the
message after, whether the
reloaded ops match the reference, and whether a second reload keeps the namespace while
torch.ops.lltm_jit stays."""

import sys
from pathlib import Path

import torch

import lltm_jit


def message():
    try:
        lltm_jit.lltm(torch.randn(3), *[torch.randn(2, 2)] * 4)
    except RuntimeError as e:
        return str(e).splitlines()[0]


print(message())
for source in Path(sys.argv[1]).iterdir():
    source.write_text(source.read_text().replace('"lltm"', '"lltm (edited)"').replace('"lltm: ', '"lltm (edited): '))
build = lltm_jit.reload()
print(build.namespace, build.built_now, lltm_jit.reload().built_now)
print(message())
gen = torch.Generator().manual_seed(0)
args = [torch.randn(*shape, generator=gen) for shape in [(3, 4), (15, 9), (15,), (3, 5), (3, 5)]]
print(all(torch.allclose(a, b) for a, b in zip(lltm_jit.lltm(*args), lltm_jit.reference_lltm(*args))))
print(lltm_jit.reload().namespace == build.namespace, torch.ops.lltm_jit.forward is not None)
