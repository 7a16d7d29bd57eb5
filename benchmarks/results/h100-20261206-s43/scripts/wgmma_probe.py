"""Session 42's wgmma probe (s42d.sh): the clock64 sums that wgmma-probe.patch leaves in gates[0]."""
import torch
import lltm_jit  # noqa: F401
s, f, b = 1024, 512, 256
x = torch.randn(64, b, f, device="cuda", dtype=torch.bfloat16)
w = torch.randn(3 * s, s + f, device="cuda", dtype=torch.bfloat16) * (s + f) ** -0.5
bias = torch.zeros(3 * s, device="cuda", dtype=torch.bfloat16)
for _ in range(2):
    out = torch.ops.lltm_jit.sequence_forward(x, w, bias, None, None, None, True)
    torch.cuda.synchronize()
counters = out[3].reshape(-1).view(torch.int64)[:128 * 8].view(128, 8).cpu()
names = ["wgmma", "wait", "chunk-waits", "issue+mma", "drain", "epilogue", "tail", "steps"]
for blk in (0, 17, 127):
    c = counters[blk]
    print(f"block {blk}: wgmma {int(c[0])}, per step cycles: " +
          ", ".join(f"{n} {int(v) // int(c[7])}" for n, v in zip(names[1:7], c[1:7])))
