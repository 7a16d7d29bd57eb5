"""Session 51: adds clock64 sums of a step's phases to the streamed backward
(tensor_core_streamed_backward.cuh of prepared-20261207-s50's patch), printed by three blocks at
its end: the cells' step, the group's arrival and wait, the cluster's wait for the reads of the
step before, the product (copies, chunks, the last wgmma's), the partial sums' stores and the
cluster barrier, the reads of the cluster's sums, and take_dh.

    python3 probe_backward.py src/tensor_core_streamed_backward.cuh
"""
import sys

p = sys.argv[1]
s = open(p).read()


def rep(a, b):
    global s
    assert s.count(a) == 1, a
    s = s.replace(a, b)


def mark(after, name):
    rep(after, after + f"    k1 = clock64(); c_{name} += k1 - q0; q0 = k1;\n")


rep('#include "tensor_core_streamed.cuh"\n', '#include "tensor_core_streamed.cuh"\n\n#include <cstdio>\n')
rep("  for (int64_t t = p.time - 1; t >= 0; --t) {\n",
    "  long long c_cells = 0, c_wait = 0, c_cwait = 0, c_product = 0, c_partial = 0, c_reads = 0, c_take = 0, q0, k1;\n"
    "  for (int64_t t = p.time - 1; t >= 0; --t) {\n    q0 = clock64();\n")
mark("    cells.step(p, gates, B, S, t, [](const Item&, int, float) {});\n", "cells")
mark("    wait_for(arrivals, static_cast<int>(p.time - t) * tiling.tiles);\n", "wait")
mark("    if (t + 1 < p.time) cluster_wait();  // the cluster has read the partial sums that the stages held\n", "cwait")
mark("    wgmma_wait<0>(d);\n", "product")
mark("    cluster_barrier();  // every block's partial sums are in\n", "partial")
mark("    cluster_arrive();  // this block's reads of the cluster's partial sums are done\n", "reads")
rep("    cells.take_dh(t, sums);\n  }\n",
    "    cells.take_dh(t, sums);\n    k1 = clock64(); c_take += k1 - q0; q0 = k1;\n  }\n"
    "  if (thread == 0 && (blockIdx.x == 0 || blockIdx.x == 17 || blockIdx.x == gridDim.x - 1)) {\n"
    "    const long long n = p.time > 0 ? p.time : 1;\n"
    "    printf(\"probe block %d of %d (T %lld): per step cycles: cells %lld wait %lld cluster-wait %lld product %lld \"\n"
    "           \"partial+barrier %lld reads %lld take_dh %lld\\n\", blockIdx.x, gridDim.x, (long long)p.time,\n"
    "           c_cells / n, c_wait / n, c_cwait / n, c_product / n, c_partial / n, c_reads / n, c_take / n);\n  }\n")
open(p, "w").write(s)
