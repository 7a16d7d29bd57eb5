"""Session 43: adds clock64 sums of a step's phases (the group's wait, the product with its chunks' waits, the
epilogue to the arrival, the tail) to a streamed kernel file, printed by three blocks at its end.

    python3 probe_phases.py src/tensor_core_streamed.cuh
"""
import sys
p = sys.argv[1]
s = open(p).read()
def rep(a, b):
    global s
    assert s.count(a) == 1, a
    s = s.replace(a, b)
rep('#include "tensor_core.cuh"\n', '#include "tensor_core.cuh"\n\n#include <cstdio>\n')
rep("  for (int64_t t = 0; t < p.time; ++t) {\n    if (t > 0) wait_for(arrivals, static_cast<int>(t) * tiling.tiles);\n",
    "  long long c_wait = 0, c_product = 0, c_epi = 0, c_tail = 0, k0, k1;\n"
    "  for (int64_t t = 0; t < p.time; ++t) {\n    k0 = clock64();\n    if (t > 0) wait_for(arrivals, static_cast<int>(t) * tiling.tiles);\n"
    "    k1 = clock64(); c_wait += k1 - k0; k0 = k1;\n")
# the product ends where the sums' exchange begins (two halves' or, in quarters2.patch, four
# quarters'), or in session 44's wgmma-n48.patch, which exchanges none, where the sums are read
anchors = ["    __syncthreads();  // every warp is done with the stages, which the handed sums overwrite\n",
           "    // The four k quarters' sums meet", "    // Gate g's N tiles are 2 g and 2 g + 1"]
after = next(a for a in anchors if a in s)
rep(after, "    k1 = clock64(); c_product += k1 - k0; k0 = k1;\n" + after)
rep("    if (t + 1 < p.time) arrive(arrivals);\n", "    if (t + 1 < p.time) arrive(arrivals);\n    k1 = clock64(); c_epi += k1 - k0; k0 = k1;\n")
rep("    if (t + 1 < p.time) load_projection(t + 1);\n  }\n",
    "    if (t + 1 < p.time) load_projection(t + 1);\n    k1 = clock64(); c_tail += k1 - k0; k0 = k1;\n  }\n"
    "  if (thread == 0 && (blockIdx.x == 0 || blockIdx.x == 17 || blockIdx.x == gridDim.x - 1)) {\n"
    "    const long long n = p.time;\n"
    "    printf(\"probe block %d of %d: per step cycles: wait %lld product %lld epilogue %lld tail %lld\\n\", blockIdx.x, gridDim.x,\n"
    "           c_wait / n, c_product / n, c_epi / n, c_tail / n);\n  }\n")
open(p, "w").write(s)
