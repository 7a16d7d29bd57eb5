"""Whether benchmarks.step.flat_lstm leaves a bfloat16 nn.LSTM's weights in cuDNN's one buffer (no
"not part of single contiguous chunk" warning), and what it changes: forward and forward +
backward of T = 64, ms, the median of 20, flattened as flat_lstm does against
flatten_parameters() alone."""
import warnings

import torch
from torch import nn

from benchmarks.step import Size, flat_lstm

for b, f, s in ((256, 512, 1024), (64, 256, 512), (1024, 256, 256)):
    size = Size(b, f, s)
    x = torch.randn(64, b, f, device="cuda", dtype=torch.bfloat16)
    plain = nn.LSTM(f, s, device="cuda", dtype=torch.bfloat16)
    plain.flatten_parameters()
    flat = flat_lstm(size, torch.device("cuda"), torch.bfloat16)
    for name, lstm in (("flatten_parameters", plain), ("flat_lstm", flat)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            lstm(x)
        chunk = any("contiguous chunk" in str(w.message) for w in caught)
        times = []
        for grad in (False, True):
            samples = []
            for _ in range(20):
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                with torch.set_grad_enabled(grad), warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    start.record()
                    out = lstm(x)[0]
                    if grad:
                        out.sum().backward()
                    end.record()
                torch.cuda.synchronize()
                samples.append(start.elapsed_time(end))
            times.append(sorted(samples)[10])
        print(f"{b}x{f}x{s} bf16 {name:20s} warns={chunk!s:5s} forward {times[0]:.3f} ms fwd+bwd {times[1]:.3f} ms")
