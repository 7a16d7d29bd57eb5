"""Session 45: over session 43's probe_phases.py (run it first), splits the product phase of a
streamed kernel file: the time a chunk waits for its copies (cp.async.wait_group) and then at the
block's barrier, summed over a step's chunks, printed beside the phases.

    python3 probe_phases.py src/tensor_core_streamed.cuh && python3 probe_chunks.py src/tensor_core_streamed.cuh
"""
import re
import sys

p = sys.argv[1]
s = open(p).read()
pattern = re.compile(r"( +)copies_wait<(\d)>\(\);\n +__syncthreads\(\);")
assert len(pattern.findall(s)) == 1, pattern.findall(s)
s = pattern.sub(lambda m: f"{m[1]}long long k2 = clock64();\n{m[1]}copies_wait<{m[2]}>();\n"
                f"{m[1]}long long k3 = clock64(); c_copies += k3 - k2;\n{m[1]}__syncthreads();\n"
                f"{m[1]}c_barrier += clock64() - k3;", s)
a = "  long long c_wait = 0,"
assert s.count(a) == 1
s = s.replace(a, "  long long c_copies = 0, c_barrier = 0;\n" + a)
a = 'tail %lld\\n", blockIdx.x, gridDim.x,\n'
assert s.count(a) == 1
s = s.replace(a, 'tail %lld (in the product: copies %lld barrier %lld)\\n", blockIdx.x, gridDim.x,\n')
a = "c_epi / n, c_tail / n);"
assert s.count(a) == 1
s = s.replace(a, "c_epi / n, c_tail / n, c_copies / n, c_barrier / n);")
open(p, "w").write(s)
