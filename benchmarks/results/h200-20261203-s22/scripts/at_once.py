"""Session 22: a bidirectional LLTMSequence with its two directions at once (each on a stream of
its own) against one after the other (LLTM_JIT_SEQUENCES_AT_ONCE=0), and cuDNN's bidirectional
nn.LSTM of the same sizes (weights flattened, TF32 off), in one run: fwd+bwd (loss = the output's
sum, gradients of the input and every parameter) and forward under no_grad; the median of
benchmarks.timing's interleaved samples (CUDA events, 5 calls a sample), in us.

    PYTHONPATH=. python3 benchmarks/results/h200-20261203-s22/scripts/at_once.py
"""
import copy
import os
import sys

import torch

import lltm_jit
from benchmarks.timing import median_seconds

torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
device = torch.device("cuda")
SIZES = [  # (T, B, F, S, layers, dtype)
    (128, 16, 128, 256, 1, torch.bfloat16),
    (128, 32, 256, 512, 1, torch.bfloat16),
    (256, 8, 256, 512, 1, torch.float16),
    (128, 16, 64, 128, 2, torch.float32),
    (128, 32, 128, 256, 1, torch.float32),
    (128, 64, 256, 512, 2, torch.float32),  # the row: no room, both ways the same
]
if len(sys.argv) > 1:
    SIZES = SIZES[: int(sys.argv[1])]


def env(value, fn):
    def call():
        os.environ["LLTM_JIT_SEQUENCES_AT_ONCE"] = value
        return fn()
    return call


print(f"{'T x B x F x S, layers, dtype':34} {'at once?':>8} {'mode':>8} {'apart':>9} {'at once':>9} "
      f"{'cuDNN':>9} {'at once/apart':>13} {'at once/cuDNN':>13}")
for T, B, F, S, L, dtype in SIZES:
    torch.manual_seed(0)
    model = lltm_jit.LLTMSequence(F, S, L, bidirectional=True, device=device, dtype=dtype)
    lstm = torch.nn.LSTM(F, S, L, bidirectional=True, device=device, dtype=dtype)
    lstm.flatten_parameters()
    # Each way its own module and input: autograd keeps a parameter's gradient node, and its
    # stream, while a graph holds it (a timed loop that switched one module between ways would
    # hand it gradients from the other stream).
    models = {way: copy.deepcopy(model) for way in ("0", "1")}
    inputs = {way: torch.randn(T, B, F, device=device, dtype=dtype).requires_grad_() for way in ("0", "1", "lstm")}
    at_once = lltm_jit.ops.sequences_at_once(inputs["1"], model.weights_l0)

    def train(way):
        m = lstm if way == "lstm" else models[way]
        leaves = [inputs[way], *m.parameters()]
        return lambda: torch.autograd.grad(m(inputs[way])[0].sum(), leaves)

    def forward(way):
        m = lstm if way == "lstm" else models[way]

        def call():
            with torch.no_grad():
                m(inputs[way])
        return call

    for mode, make in (("fwd+bwd", train), ("fwd", forward)):
        fns = [env("0", make("0")), env("1", make("1")), make("lstm")]
        apart, together, cudnn = (t * 1e6 for t in median_seconds(fns, device, warmup=3, repeats=200, budget=1.0,
                                                                   calls=5))
        name = f"{T}x{B}x{F}x{S} L{L} {str(dtype).removeprefix('torch.')}"
        print(f"{name:34} {str(at_once):>8} {mode:>8} {apart:9.0f} {together:9.0f} {cudnn:9.0f} "
              f"{together / apart:13.2f} {together / cudnn:13.2f}", flush=True)
os.environ.pop("LLTM_JIT_SEQUENCES_AT_ONCE")
