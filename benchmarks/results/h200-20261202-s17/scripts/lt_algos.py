"""The step path's per-step products at 256x512x1024 (fp32, TF32): every algorithm cuBLASLt's
heuristic offers, timed, against torch.mm's choice. Measurement only (session 17)."""
import ctypes, glob, os, torch

torch.zeros(1, device="cuda") @ torch.zeros(1, 1, device="cuda")  # loads cuBLAS(Lt)
path = next(l.split()[-1] for l in open("/proc/self/maps") if "libcublasLt.so" in l)
lt = ctypes.CDLL(path)
c_p, c_i, c_u64, c_i64 = ctypes.c_void_p, ctypes.c_int, ctypes.c_uint64, ctypes.c_int64


class Algo(ctypes.Structure):
    _fields_ = [("data", ctypes.c_uint64 * 8)]


class Result(ctypes.Structure):
    _fields_ = [("algo", Algo), ("workspace", ctypes.c_size_t), ("state", c_i), ("waves", ctypes.c_float),
                ("reserved", c_i * 4)]


P = ctypes.POINTER
lt.cublasLtCreate.argtypes = [P(c_p)]
lt.cublasLtMatrixLayoutCreate.argtypes = [P(c_p), c_i, c_u64, c_u64, c_i64]
lt.cublasLtMatmulDescCreate.argtypes = [P(c_p), c_i, c_i]
lt.cublasLtMatmulDescSetAttribute.argtypes = [c_p, c_i, c_p, ctypes.c_size_t]
lt.cublasLtMatmulPreferenceCreate.argtypes = [P(c_p)]
lt.cublasLtMatmulPreferenceSetAttribute.argtypes = [c_p, c_i, c_p, ctypes.c_size_t]
lt.cublasLtMatmulAlgoGetHeuristic.argtypes = [c_p, c_p, c_p, c_p, c_p, c_p, c_p, c_i, c_p, P(c_i)]
lt.cublasLtMatmulAlgoConfigGetAttribute.argtypes = [c_p, c_i, c_p, ctypes.c_size_t, P(ctypes.c_size_t)]
lt.cublasLtMatmul.argtypes = [c_p, c_p, c_p, c_p, c_p, c_p, c_p, c_p, c_p, c_p, c_p, c_p, c_p, c_p, ctypes.c_size_t,
                              c_p]


def ok(status, what):
    assert status == 0, f"{what}: status {status}"


handle = c_p()
ok(lt.cublasLtCreate(ctypes.byref(handle)), "create")
R_32F, TRANS = 0, {"N": 0, "T": 1}
workspace = torch.empty(32 << 20, dtype=torch.uint8, device="cuda")


def layout(rows, cols, ld):
    d = c_p()
    ok(lt.cublasLtMatrixLayoutCreate(ctypes.byref(d), R_32F, rows, cols, ld), "layout")
    return d


def attr(id_, algo):
    v, size = ctypes.c_int(0), ctypes.c_size_t(0)
    lt.cublasLtMatmulAlgoConfigGetAttribute(ctypes.byref(algo), id_, ctypes.byref(v), 4, ctypes.byref(size))
    return v.value


def timed(fn, reps=60):
    for _ in range(5):
        fn()
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn()
    torch.cuda.current_stream().wait_stream(s)
    with torch.cuda.graph(g):
        for _ in range(reps):
            fn()
    g.replay()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(5):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); g.replay(); b.record(); b.synchronize()
        best = min(best, a.elapsed_time(b) * 1000 / reps)
    return best


def case(name, compute, transa, m, n, k, A, lda, B, ldb, C, ldc, reference):
    desc = c_p()
    ok(lt.cublasLtMatmulDescCreate(ctypes.byref(desc), compute, R_32F), "desc")
    op = ctypes.c_int(TRANS[transa])
    ok(lt.cublasLtMatmulDescSetAttribute(desc, 3, ctypes.byref(op), 4), "transa")
    a_desc = layout(k, m, lda) if transa == "T" else layout(m, k, lda)
    b_desc, c_desc = layout(k, n, ldb), layout(m, n, ldc)
    pref = c_p()
    ok(lt.cublasLtMatmulPreferenceCreate(ctypes.byref(pref)), "pref")
    ws = ctypes.c_uint64(workspace.numel())
    ok(lt.cublasLtMatmulPreferenceSetAttribute(pref, 1, ctypes.byref(ws), 8), "pref ws")
    results, count = (Result * 32)(), ctypes.c_int(0)
    ok(lt.cublasLtMatmulAlgoGetHeuristic(handle, desc, a_desc, b_desc, c_desc, c_desc, pref, 32, results,
                                         ctypes.byref(count)), "heuristic")
    flops = 2 * m * n * k
    t_ref = timed(reference)
    print(f"== {name}: m={m} n={n} k={k}; torch's product {t_ref:6.1f} us ({flops / t_ref / 1e6:5.1f} TFLOP/s)")
    one, zero = ctypes.c_float(1.0), ctypes.c_float(0.0)
    stream = lambda: c_p(torch.cuda.current_stream().cuda_stream)
    for i in range(count.value):
        r = results[i]
        if r.state != 0:
            continue
        algo = Algo(r.algo.data)
        fn = lambda: ok(lt.cublasLtMatmul(handle, desc, ctypes.byref(one), c_p(A.data_ptr()), a_desc,
                                          c_p(B.data_ptr()), b_desc, ctypes.byref(zero), c_p(C.data_ptr()), c_desc,
                                          c_p(C.data_ptr()), c_desc, ctypes.byref(algo), c_p(workspace.data_ptr()),
                                          r.workspace, stream()), "matmul")
        try:
            t = timed(fn)
        except AssertionError as e:
            print(f"  algo {i}: {e}")
            continue
        print(f"  algo {i:2d} id {attr(0, algo):3d} tile {attr(1, algo):3d} splitK {attr(2, algo):2d} "
              f"reduction {attr(3, algo)} stages {attr(6, algo):3d} waves {r.waves:5.2f} ws {r.workspace >> 10:6d} KiB: "
              f"{t:6.1f} us ({flops / t / 1e6:5.1f} TFLOP/s)")


B_, F, S = 256, 512, 1024
weights = torch.randn(3 * S, S + F, device="cuda")
h = torch.randn(B_, S, device="cuda")
d_gates = torch.randn(B_, 3 * S, device="cuda")
pre = torch.empty(B_, 3 * S, device="cuda")
d_h = torch.empty(B_, S, device="cuda")
w_h, w_h_t_rows = weights[:, :S], weights[:, :S].t().contiguous()
for tf32 in (False, True):
    torch.backends.cuda.matmul.allow_tf32 = tf32
    compute = 77 if tf32 else 68
    tag = "tf32" if tf32 else "fp32"
    case(f"{tag} forward: pre = h W_h^T", compute, "T", 3 * S, B_, S, weights, S + F, h, S, pre, 3 * S,
         lambda: torch.mm(h, w_h.t(), out=pre))
    case(f"{tag} backward: d_h = d_gates W_h (W_h in place)", compute, "N", S, B_, 3 * S, weights, S + F, d_gates,
         3 * S, d_h, S, lambda: torch.mm(d_gates, w_h, out=d_h))
    if tf32:
        case(f"{tag} backward, W_h^T row-major copy", compute, "T", S, B_, 3 * S, w_h_t_rows, 3 * S, d_gates, 3 * S,
             d_h, S, lambda: torch.mm(d_gates, w_h_t_rows.t(), out=d_h))
