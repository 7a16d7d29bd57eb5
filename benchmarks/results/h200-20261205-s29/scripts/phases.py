"""Session 29: where a tensor-core step's cycles go, by clock64 between the phases of a step, in
block 0 and the last block (thread 0, so warp 0's view), summed over the steps and printed by the
kernel at its end. Patches a copy of the tree (argv[1]) in place; the patched kernels compute the
same values as the tree's.

    python3 phases.py /tmp/ph && cd /tmp/ph && PYTHONPATH=. python3 phases_run.py ...
"""
import re
import sys
from pathlib import Path

src = Path(sys.argv[1]) / "src"

DECL = ("  unsigned long long ph_[8] = {}, tp_ = 0;\n"
        "  const bool ph_on_ = thread_rank() == 0 && (linear_block() == 0 || linear_block() == blocks_total() - 1);\n")
HELPERS = """
namespace lltm::cuda {
__device__ __forceinline__ unsigned linear_block() { return blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z); }
__device__ __forceinline__ unsigned blocks_total() { return gridDim.x * gridDim.y * gridDim.z; }
}
#define PH(i) do { if (ph_on_) { const unsigned long long n_ = clock64(); if ((i) > 0) ph_[(i) - 1] += n_ - tp_; tp_ = n_; } } while (0)
#define PH_PRINT(name, n) do { if (ph_on_) printf("PH %s R=%d held=%d cl=%d tiles=%d w=%d sl=%d blk=%u steps=%lld: %llu %llu %llu %llu %llu %llu %llu\\n", name, R, int(tiling.held), int(CLUSTER), tiling.tiles, tiling.width, tiling.slices, linear_block(), (long long)p.time, ph_[0], ph_[1], ph_[2], ph_[3], ph_[4], ph_[5], ph_[6]); } while (0)
"""


def patch(name, edits):
    path = src / name
    text = path.read_text()
    for old, new in edits:
        assert text.count(old) == 1, (name, old)
        text = text.replace(old, new)
    path.write_text(text)


patch("tensor_core_forward.cuh", [
    ('#include "tensor_core.cuh"\n', '#include "tensor_core.cuh"\n#include <cstdio>\n' + HELPERS),
    ("  for (int64_t t = 0; t < p.time; ++t) {\n    uint16_t* operand",
     DECL + "  for (int64_t t = 0; t < p.time; ++t) {\n    PH(0);\n    uint16_t* operand"),
    ("    __syncthreads();  // the partial sums are in; every warp has read h\n",
     "    PH(1);\n    __syncthreads();  // the partial sums are in; every warp has read h\n    PH(2);\n"),
    ("    // The group's exchange. In a cluster,", "    PH(3);\n    // The group's exchange. In a cluster,"),
    ("    cells.store(p, t, S);\n    cells.load(p, t + 1, S);\n",
     "    PH(4);\n    cells.store(p, t, S);\n    cells.load(p, t + 1, S);\n    PH(5);\n"),
    ("      if (t + 1 < p.time) mbarrier_wait<Scope::kCluster>(received + (t + 1) % 2, static_cast<unsigned>(t / 2 % 2));\n      continue;\n",
     "      if (t + 1 < p.time) mbarrier_wait<Scope::kCluster>(received + (t + 1) % 2, static_cast<unsigned>(t / 2 % 2));\n      PH(6);\n      continue;\n"),
    ("    if (!bulk || tiling.partials_over_operand) __syncthreads();\n  }\n",
     "    if (!bulk || tiling.partials_over_operand) __syncthreads();\n    PH(6);\n  }\n  PH_PRINT(\"fwd\", 0);\n"),
])

patch("tensor_core_backward.cuh", [
    ('#include "tensor_core.cuh"\n', '#include "tensor_core.cuh"\n#include <cstdio>\n' + HELPERS),
    ("  for (int64_t t = p.time - 1; t >= 0; --t) {\n    cells.step(",
     DECL + "  for (int64_t t = p.time - 1; t >= 0; --t) {\n    PH(0);\n    cells.step("),
    ("    __syncthreads();  // the step's gate gradients are in shared memory\n",
     "    PH(1);\n    __syncthreads();  // the step's gate gradients are in shared memory\n    PH(2);\n"),
    ("    __syncthreads();  // the partial sums are in; every warp has read the gate gradients\n",
     "    PH(3);\n    __syncthreads();  // the partial sums are in; every warp has read the gate gradients\n    PH(4);\n"),
    ("    // One tile: the splits' partial sums; a cluster: the tiles' shares in the inbox.\n",
     "    PH(5);\n    // One tile: the splits' partial sums; a cluster: the tiles' shares in the inbox.\n"),
    ("  cells.finish(p, S);\n  if (p.d_bias == nullptr) return;\n",
     "  PH_PRINT(\"bwd\", 0);\n  cells.finish(p, S);\n  if (p.d_bias == nullptr) return;\n"),
    ("      cells.take_dh(t, tiling.tiles, exchange, parity, B, S, from_block);\n    }\n  }\n",
     "      cells.take_dh(t, tiling.tiles, exchange, parity, B, S, from_block);\n    }\n    PH(6);\n  }\n"),
])
print("patched")
