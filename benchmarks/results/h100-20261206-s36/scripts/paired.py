"""Session 36: a bidirectional LLTMSequence's directions at once with the tiling for two launches
(paired calls: groups of up to 16 rows), timed with the tree on PYTHONPATH. Usage:
  python3 paired.py LABEL [check]
Prints a line per size: µs, median over samples of 10 back-to-back calls; with `check`, first
the modules' outputs and gradients against the float64 reference at odd sizes; where the tree's
lltm_sequence takes `paired`, one direction alone paired and not."""
import inspect
import os
import sys
import time

import torch

import lltm_jit
from lltm_jit.reference import reference_lltm_layers

label = sys.argv[1]


def timed(fn, samples=15):
    fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(samples):
        start = time.perf_counter()
        for _ in range(10):
            fn()
        torch.cuda.synchronize()
        out.append((time.perf_counter() - start) / 10 * 1e6)
    return sorted(out)[len(out) // 2]


SIZES = [  # time, batch, features, state, layers, bidirectional
    (128, 64, 256, 512, 2, True),   # issue 21's row
    (64, 64, 256, 512, 1, True),
    (64, 40, 128, 384, 1, True),
    (64, 32, 128, 256, 2, True),    # bench.py --plan cudnn-other's bidirectional row
    (64, 64, 256, 512, 1, False),   # control: one direction
]

if len(sys.argv) > 2:  # correctness of the paired tilings against the float64 reference, odd sizes
    for (t, b, f, s, lay) in [(19, 61, 37, 500, 2), (7, 40, 24, 384, 1), (11, 33, 16, 512, 1), (5, 64, 8, 448, 1)]:
        torch.manual_seed(0)
        m = lltm_jit.LLTMSequence(f, s, lay, bidirectional=True, device="cuda")
        x = torch.randn(t, b, f, device="cuda", requires_grad=True)
        h0 = torch.randn(2 * lay, b, s, device="cuda", requires_grad=True)
        c0 = torch.randn(2 * lay, b, s, device="cuda", requires_grad=True)
        lengths = torch.randint(1, t + 1, (b,))  # a PackedSequence for the reference: no zeros
        lengths[0] = t
        leaves = [x, h0, c0, *m.parameters()]
        at_once = lltm_jit.ops.sequences_at_once(x, m.weights_l0)
        y, (hn, cn) = m(x, (h0, c0), lengths)
        grads = torch.autograd.grad(y.sum() + hn.sum() + cn.sum(), leaves)
        md = lltm_jit.LLTMSequence(f, s, lay, bidirectional=True, device="cpu", dtype=torch.float64)
        md.load_state_dict({k: v.double().cpu() for k, v in m.state_dict().items()})
        xd, h0d, c0d = (v.detach().double().cpu().requires_grad_() for v in (x, h0, c0))
        packed = torch.nn.utils.rnn.pack_padded_sequence(xd, lengths, enforce_sorted=False)
        yd, (hnd, cnd) = reference_lltm_layers(md, packed, (h0d, c0d))
        gd = torch.autograd.grad(yd.sum() + hnd.sum() + cnd.sum(), [xd, h0d, c0d, *md.parameters()])
        worst = 0.0
        for a, e in zip([y, hn, cn, *grads], [yd, hnd, cnd, *gd], strict=True):
            worst = max(worst, ((a.double().cpu() - e).abs().max() / e.abs().max().clamp_min(1e-30)).item())
        print(f"{label} check T{t} B{b} F{f} S{s} L{lay} at_once={at_once} worst rel err {worst:.2e}"
              f" {'ok' if worst < 1e-4 else 'FAIL'}", flush=True)
    sys.exit()

for (t, b, f, s, lay, bi) in SIZES:
    torch.manual_seed(0)
    m = lltm_jit.LLTMSequence(f, s, lay, bidirectional=bi, device="cuda")
    x = torch.randn(t, b, f, device="cuda", requires_grad=True)

    def fwd():
        with torch.no_grad():
            m(x)

    def fwd_bwd():
        y, _ = m(x)
        y.sum().backward()

    at_once = lltm_jit.ops.sequences_at_once(x, m.weights_l0) if bi else "-"
    print(f"{label:24s} T{t} B{b} F{f} S{s} L{lay} bi={bi} at_once={at_once} fwd {timed(fwd):9.1f} us"
          f"  fwd+bwd {timed(fwd_bwd):9.1f} us", flush=True)

if "paired" in inspect.signature(lltm_jit.lltm_sequence).parameters:  # one direction alone, paired or not
    t, b, f, s = 64, 64, 256, 512
    torch.manual_seed(0)
    w = torch.randn(3 * s, s + f, device="cuda") / s ** 0.5
    bias = torch.randn(3 * s, device="cuda")
    x = torch.randn(t, b, f, device="cuda")
    for paired in (False, True):
        def fwd():
            lltm_jit.lltm_sequence(x, w, bias, paired=paired)

        print(f"{label:24s} one direction T{t} B{b} F{f} S{s} paired={paired} fwd {timed(fwd):9.1f} us", flush=True)
