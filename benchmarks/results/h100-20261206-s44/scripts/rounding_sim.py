"""The half-type sequence paths' roundings replayed in float64 on the CPU, against
benchmarks.precision's inputs and float64 reference: "step" sums the pre-activations in float (its
input projection and bias included), "persistent" reads the projection with the bias rounded to
the storage type, "bias apart" rounds the projection alone. Both round h as the product's operand,
the saved pre-activations and cell states, and the gate gradients as the backward's operand.

    python3 benchmarks/results/h100-20261206-s44/scripts/rounding_sim.py 130x16x200 40x256x128
    (SIM_SEEDS=8 for 8 seeds, SIM_DTYPE=float16)
"""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[4]))
from benchmarks.cases import random_arguments, rel_err
from benchmarks.precision import sequence_args, outputs_and_grads, NAMES
from lltm_jit.reference import reference_lltm_sequence

def rnd(x, dtype):
    return x.to(dtype).double() if dtype is not None else x

def run(args, up, dtype, project_rounded, h_round=True, dg_round=True, save_round=True, bias_apart=False):
    x, W, b, h0, c0 = args
    T, B, F = x.shape; S = h0.shape[1]
    Wh, Wx = rnd(W[:, :S], dtype), rnd(W[:, S:], dtype)  # weights already rounded inputs
    P = torch.einsum("tbf,gf->tbg", x, Wx)
    X = (rnd(P, dtype) + b if bias_apart else rnd(P + b, dtype)) if project_rounded else P + b
    h, c = h0, c0
    pres, cprev, hs, outs = [], [], [], []
    for t in range(T):
        hr = rnd(h, dtype) if h_round else h
        pre = X[t] + hr @ Wh.t()
        z0, z1, z2 = pre.chunk(3, 1)
        i, o, cand = torch.sigmoid(z0), torch.sigmoid(z1), torch.nn.functional.elu(z2)
        cprev.append(rnd(c, dtype) if save_round else c)
        hs.append(hr)
        c = c + cand * i
        h = torch.tanh(c) * o
        pres.append(rnd(pre, dtype) if save_round else pre)
        outs.append(rnd(h, dtype))
    output = torch.stack(outs); h_n = rnd(h, dtype); c_n = rnd(c, dtype)
    g_out, g_h, g_c = up
    dh, dc = g_h.clone(), g_c.clone()
    dgs = [None] * T
    for t in reversed(range(T)):
        z0, z1, z2 = pres[t].chunk(3, 1)
        i, o, cand = torch.sigmoid(z0), torch.sigmoid(z1), torch.nn.functional.elu(z2)
        cc = cprev[t] + cand * i
        tc = torch.tanh(cc)
        gh = g_out[t] + dh
        dz1 = gh * tc * o * (1 - o)
        dct = dc + gh * o * (1 - tc * tc)
        dz0 = dct * cand * i * (1 - i)
        dz2 = dct * i * torch.where(z2 > 0, torch.ones_like(z2), torch.exp(z2))
        dg = torch.cat([dz0, dz1, dz2], 1)
        dg = rnd(dg, dtype) if dg_round else dg
        dgs[t] = dg
        dc = dct
        dh = dg @ Wh
    dG = torch.stack(dgs)
    d_input = torch.einsum("tbg,gf->tbf", dG, Wx)
    d_w = torch.cat([torch.einsum("tbg,tbs->gs", dG, torch.stack(hs)), torch.einsum("tbg,tbf->gf", dG, x)], 1)
    d_b = dG.sum((0, 1))
    return [output, h_n, c_n, d_input, d_w, d_b, dh, dc]

def main(size, dtype, seeds=int(__import__("os").environ.get("SIM_SEEDS", 4)), T=256):
    B, F, S = size
    variants = {"step": dict(project_rounded=False), "persistent": dict(project_rounded=True),
                "bias apart": dict(project_rounded=True, bias_apart=True)}
    acc = {k: [0.0] * 8 for k in list(variants) + ["eager"]}
    for seed in range(seeds):
        args, up = sequence_args(T, B, F, S, seed, "cpu")
        low = [a.to(dtype).double() for a in args]
        upd = [u.to(dtype).double() for u in up]
        exact = outputs_and_grads(reference_lltm_sequence, low, upd)
        eager = outputs_and_grads(reference_lltm_sequence, [a.to(dtype) for a in args], upd)
        for n in range(8): acc["eager"][n] += rel_err(eager[n], exact[n]) / seeds
        for k, kw in variants.items():
            got = run(low, upd, dtype, **kw)
            for n in range(8): acc[k][n] += rel_err(got[n], exact[n]) / seeds
    print(size, dtype)
    print(" " * 16 + " ".join(f"{n:>9}" for n in NAMES))
    for k, v in acc.items():
        print(f"{k:>16}" + " ".join(f"{e:9.2e}" for e in v))

DT = getattr(torch, __import__("os").environ.get("SIM_DTYPE", "bfloat16"))
for s in sys.argv[1:]:
    main(tuple(int(n) for n in s.split("x")), DT)
