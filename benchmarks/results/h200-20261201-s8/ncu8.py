"""A few fwd+bwd calls at 16x32x128 fp32 and 64x256x512 fp32, for ncu to profile the persistent kernels."""
import torch, lltm_jit
torch.backends.cuda.matmul.allow_tf32 = False
for T, B, F, S in ((64, 16, 32, 128), (64, 64, 256, 512)):
    m = lltm_jit.LLTMSequence(F, S, device="cuda")
    x = torch.randn(T, B, F, device="cuda", requires_grad=True)
    for _ in range(2):
        torch.autograd.grad(m(x)[0].sum(), (x, m.weights_l0, m.bias_l0))
torch.cuda.synchronize()
