"""Import lltm_jit, run one LLTM step, and print the backend and the largest difference from the
pure-PyTorch reference."""

import torch

import lltm_jit

gen = torch.Generator().manual_seed(0)
args = [torch.randn(*shape, generator=gen) for shape in [(3, 4), (15, 9), (15,), (3, 5), (3, 5)]]
ours, reference = lltm_jit.lltm(*args), lltm_jit.reference_lltm(*args)
print(lltm_jit.backend(), max((a - b).abs().max().item() for a, b in zip(ours, reference)))
