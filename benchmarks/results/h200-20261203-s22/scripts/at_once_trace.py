"""Session 22: a bidirectional LLTMSequence's training step with its directions at once, as a
training loop runs it (one module, ten steps, warnings recorded), then one step's kernels from
torch.profiler: each stream's busy time, the step's span, and how much of the streams' work
overlapped; the kernels in order of their start (stream, start and duration in us).

    PYTHONPATH=. python3 benchmarks/results/h200-20261203-s22/scripts/at_once_trace.py
"""
import os
import warnings

import torch

import lltm_jit

device = torch.device("cuda")
for T, B, F, S, L, dtype in [(128, 16, 64, 128, 2, torch.float32), (128, 16, 128, 256, 1, torch.bfloat16)]:
    for way in ("1", "0"):
        os.environ["LLTM_JIT_SEQUENCES_AT_ONCE"] = way
        torch.manual_seed(0)
        model = lltm_jit.LLTMSequence(F, S, L, bidirectional=True, device=device, dtype=dtype)
        x = torch.randn(T, B, F, device=device, dtype=dtype).requires_grad_()
        optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)

        def step():
            optimizer.zero_grad()
            model(x)[0].float().sum().backward()
            optimizer.step()

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for _ in range(10):
                step()
            torch.cuda.synchronize()
        mismatches = sum("AccumulateGrad node's stream" in str(w.message) for w in caught)
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            step()
            torch.cuda.synchronize()
        kernels = sorted((e.time_range.start, e.time_range.end, e.device_resource_id, e.name) for e in prof.events()
                         if e.device_type == torch.autograd.DeviceType.CUDA)
        t0, t1 = kernels[0][0], max(k[1] for k in kernels)
        busy = {}
        for start, end, stream, _ in kernels:
            busy[stream] = busy.get(stream, 0) + end - start
        union, reach = 0, t0
        for start, end, _, _ in kernels:
            union += max(0, end - max(start, reach))
            reach = max(reach, end)
        print(f"== {T}x{B}x{F}x{S} L{L} {dtype} at once={way}: {mismatches} AccumulateGrad stream warnings in 10 "
              f"steps; span {t1 - t0:.0f} us, busy by stream {{{', '.join(f'{s}: {b:.0f}' for s, b in busy.items())}}}, "
              f"overlapped {sum(busy.values()) - union:.0f} us")
        for start, end, stream, name in kernels:
            if end - start > 20:
                print(f"   s{stream:<3} {start - t0:8.0f} {end - start:7.0f}  {name[:70]}")
os.environ.pop("LLTM_JIT_SEQUENCES_AT_ONCE")
