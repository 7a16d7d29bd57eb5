"""The half types' persistent kernels on tensor cores against their CUDA-core path
(LLTM_JIT_TENSOR_CORES=0: the CUDA-core persistent kernels where they fit, else the per-step path)
and cuDNN's nn.LSTM (flattened weights, same dtype), interleaved in one process: median wall time
of back-to-back calls, synchronized, T = 64 unless noted, forward + backward (loss = the outputs'
sum) or forward only under no_grad. TF32 off.

    PYTHONPATH=. python3 benchmarks/tensor_cores.py [--rounds 30]
"""

import argparse
import os
import statistics
import time

import torch

import lltm_jit
from benchmarks.cases import random_arguments
from benchmarks.step import flat_lstm
from benchmarks.timing import dtype_name

# (batch x features x state, dtype, T, mode): the float16 table (where float16 takes no
# tensor-core kernel, src/sequence_persistent.cu, both columns time the same path) and two
# bfloat16 rows.
ROWS = [("128x512x512", torch.float16, 64, "fwd+bwd"), ("128x512x512", torch.float16, 64, "forward"),
        ("64x1024x1024", torch.float16, 64, "fwd+bwd"), ("8x256x512", torch.float16, 256, "fwd+bwd"),
        ("64x256x512", torch.bfloat16, 64, "fwd+bwd"), ("128x512x512", torch.bfloat16, 64, "fwd+bwd")]
BACKENDS = ("tensor cores", "CUDA cores", "cuDNN")


class Size:
    def __init__(self, text):
        self.batch, self.input_features, self.state_size = (int(v) for v in text.split("x"))


def calls(size: str, dtype: torch.dtype, steps: int, mode: str):
    """One call of each backend, by name."""
    s = Size(size)
    args = random_arguments(s.batch, s.input_features, s.state_size, time=steps,
                            generator=torch.Generator().manual_seed(0))
    x, w, b = (a.to("cuda", dtype).requires_grad_() for a in args[:3])
    lstm = flat_lstm(s, torch.device("cuda"), dtype)

    def ours(tensor_cores):
        def call():
            os.environ["LLTM_JIT_TENSOR_CORES"] = tensor_cores  # read at each call
            if mode == "forward":
                with torch.no_grad():
                    lltm_jit.lltm_sequence(x, w, b)
            else:
                torch.autograd.grad(lltm_jit.lltm_sequence(x, w, b)[0].sum(), (x, w, b))
        return call

    def cudnn():
        if mode == "forward":
            with torch.no_grad():
                lstm(x)
        else:
            torch.autograd.grad(lstm(x)[0].sum(), (x, *lstm.parameters()))

    return {"tensor cores": ours("1"), "CUDA cores": ours("0"), "cuDNN": cudnn}


def median_seconds(fns, rounds: int, warmup: int = 3, per_sample: int = 3):
    """Median over rounds of the mean of `per_sample` back-to-back calls, the backends in turns."""
    times = {name: [] for name in fns}
    for i in range(warmup + rounds):
        for name, fn in fns.items():
            torch.cuda.synchronize()
            start = time.perf_counter()
            for _ in range(per_sample):
                fn()
            torch.cuda.synchronize()
            if i >= warmup:
                times[name].append((time.perf_counter() - start) / per_sample)
    return {name: statistics.median(t) for name, t in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("tensor_cores: needs a CUDA GPU")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, cuDNN {torch.backends.cudnn.version()}")
    header = f"| size, dtype, T, mode | {' ms | '.join(BACKENDS)} ms | TC / cuDNN | TC / CUDA cores |"
    lines = [header, "|" + "---|" * (len(BACKENDS) + 3)]
    for size, dtype, steps, mode in ROWS:
        try:
            t = median_seconds(calls(size, dtype, steps, mode), args.rounds)
        except Exception as error:  # noqa: BLE001 - one row's failure (out of memory) leaves the others
            lines.append(f"| {size}, {dtype_name(dtype)}, T={steps}, {mode} | ERROR {type(error).__name__}: "
                         f"{str(error).splitlines()[0][:120]} |")
            print(lines[-1], flush=True)
            continue
        ms = {k: v * 1e3 for k, v in t.items()}
        lines.append(f"| {size}, {dtype_name(dtype)}, T={steps}, {mode} | "
                     + " | ".join(f"{ms[k]:.3f}" for k in BACKENDS)
                     + f" | {ms['tensor cores'] / ms['cuDNN']:.2f} | {ms['tensor cores'] / ms['CUDA cores']:.2f} |")
        print(lines[-1], flush=True)
    os.environ.pop("LLTM_JIT_TENSOR_CORES", None)
    print("\n" + "\n".join(lines))


if __name__ == "__main__":
    main()
