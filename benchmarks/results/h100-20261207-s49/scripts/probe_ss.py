"""Session 49: over session 43's probe_phases.py (run it first), splits the SS streamed product of
tensor_core_streamed.cuh a step: the chunks' copy waits (cp.async.wait_group with the proxy
fence), their block barriers, and the waits for the wgmma's of the chunk before (wgmma_wait<1>)
and the last (wgmma_wait<0>), summed over a step and printed beside the phases.

    python3 probe_phases.py src/tensor_core_streamed.cuh && python3 probe_ss.py src/tensor_core_streamed.cuh
"""
import sys

p = sys.argv[1]
s = open(p).read()


def rep(a, b):
    global s
    assert s.count(a) == 1, a
    s = s.replace(a, b)


rep("        copies_wait<1>();\n        shared_for_async_proxy();",
    "        long long k2 = clock64();\n        copies_wait<1>();\n        shared_for_async_proxy();\n"
    "        long long k3 = clock64(); c_copies += k3 - k2;")
rep("        __syncthreads();  // the chunk is in;",
    "        __syncthreads(); c_barrier += clock64() - k3;  // the chunk is in;")
rep("        wgmma_commit();\n        wgmma_wait<1>(d);",
    "        wgmma_commit();\n        long long k4 = clock64();\n        wgmma_wait<1>(d);\n        c_mma += clock64() - k4;")
rep("    wgmma_wait<0>(d);\n", "    long long k5 = clock64();\n    wgmma_wait<0>(d);\n    c_last += clock64() - k5;\n")
rep("  long long c_wait = 0,", "  long long c_copies = 0, c_barrier = 0, c_mma = 0, c_last = 0;\n  long long c_wait = 0,")
rep('tail %lld\\n", blockIdx.x, gridDim.x,\n',
    'tail %lld (in the product: copies %lld barrier %lld wgmma-wait %lld last %lld)\\n", blockIdx.x, gridDim.x,\n')
rep("c_epi / n, c_tail / n);", "c_epi / n, c_tail / n, c_copies / n, c_barrier / n, c_mma / n, c_last / n);")
open(p, "w").write(s)
