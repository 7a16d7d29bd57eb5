"""Export a model with lltm_jit's operators to an AOTInductor package for run_package.cpp.

The issue's model: LLTMSequence(8, 16, num_layers=2, bidirectional=True) and a linear head, in
eval mode, exported with dynamic time and batch dimensions and compiled with AOTInductor. Writes
to --out:

- model.pt2: the package (its operators need the lltm_jit library loaded, as run_package links it);
- data.pt: {"inputs": [x, lengths], "outputs": [y, h_n, c_n], "tolerance": t}, on the CPU, the
  outputs eager PyTorch's for inputs of other sizes than the export's.

    python examples/cpp/export_model.py --out /tmp/lltm-export [--device cuda] [--dtype bfloat16]
"""

import argparse
from pathlib import Path

import torch
from torch import nn
from torch.export import Dim

import lltm_jit

# The relative error of a package against eager: the kernels are the same, the head's product
# may be Inductor's.
TOLERANCE = {"float32": 1e-5, "bfloat16": 2e-2}


class Tagger(nn.Module):
    """Per-step scores of a bidirectional 2-layer LLTM: (x (time, batch, 8), lengths (batch,))
    -> (y (time, batch, 4), h_n, c_n (4, batch, 16))."""

    def __init__(self):
        super().__init__()
        self.rnn = lltm_jit.LLTMSequence(8, 16, num_layers=2, bidirectional=True)
        self.head = nn.Linear(32, 4)

    def forward(self, x, lengths):
        output, (h_n, c_n) = self.rnn(x, lengths=lengths)
        return self.head(output), h_n, c_n


def inputs(time, batch, device, dtype, seed):
    """x on `device`, lengths on the CPU (as nn.utils.rnn keeps them), among them 0 and time."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(time, batch, 8, generator=gen).to(device, dtype)
    lengths = torch.randint(1, time, (batch,), generator=gen)
    lengths[0], lengths[-1] = time, 0
    return x, lengths


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="folder for model.pt2 and data.pt")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--dtype", default="float32", choices=list(TOLERANCE))
    args = parser.parse_args(argv)
    dtype = getattr(torch, args.dtype)
    args.out.mkdir(parents=True, exist_ok=True)

    torch.manual_seed(0)
    model = Tagger().to(args.device, dtype).eval()
    time, batch = Dim("time", min=1, max=4096), Dim("batch", min=1, max=4096)
    exported = torch.export.export(model, inputs(6, 3, args.device, dtype, seed=0),
                                   dynamic_shapes=({0: time, 1: batch}, {0: batch}))
    package = torch._inductor.aoti_compile_and_package(exported, package_path=str(args.out / "model.pt2"))

    x, lengths = inputs(9, 5, args.device, dtype, seed=1)
    with torch.no_grad():
        outputs = model(x, lengths)
    torch.save({"inputs": [x.cpu(), lengths], "outputs": [t.cpu() for t in outputs],
                "tolerance": TOLERANCE[args.dtype]}, args.out / "data.pt")
    print(f"wrote {package} and {args.out / 'data.pt'}")


if __name__ == "__main__":
    main()
