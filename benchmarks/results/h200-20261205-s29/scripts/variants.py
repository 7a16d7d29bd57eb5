"""Session 29: variant trees of the tensor-core product for benchmarks.ab, each a copy of the tree
(argv[2]) patched into argv[1]/<name>: `unroll` (warp_product's two-step loop unrolled twice
more), `ldsm` (the B fragments by ldmatrix, two N tiles or one a load, rather than two 4-byte
loads a tile), `both`."""
import shutil
import sys
from pathlib import Path

out, tree = Path(sys.argv[1]), Path(sys.argv[2])

UNROLL = ("  int kt = k_begin;\n  for (; kt + 1 < k_end; kt += 2) {\n",
          "  int kt = k_begin;\n#pragma unroll 2\n  for (; kt + 1 < k_end; kt += 2) {\n")
LDSM_OLD = """#pragma unroll
    for (int n = 0; n < N_TILES; ++n) {
      const uint16_t* col = b_lane + n * 8 * b_ld + kt * 16;
      mma<scalar_t>(sums[set][n], a, *reinterpret_cast<const uint32_t*>(col), *reinterpret_cast<const uint32_t*>(col + 8));
    }
"""
LDSM_NEW = """    uint32_t bf[N_TILES][2];
    if constexpr (N_TILES == 1) {
      asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];"
                   : "=r"(bf[0][0]), "=r"(bf[0][1]) : "r"(shared_address(b_ldsm + kt * 16)));
    } else {
#pragma unroll
      for (int n = 0; n < N_TILES; n += 2) {
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                     : "=r"(bf[n][0]), "=r"(bf[n][1]), "=r"(bf[n + 1][0]), "=r"(bf[n + 1][1])
                     : "r"(shared_address(b_ldsm + n * 8 * b_ld + kt * 16)));
      }
    }
#pragma unroll
    for (int n = 0; n < N_TILES; ++n) mma<scalar_t>(sums[set][n], a, bf[n][0], bf[n][1]);
"""
LDSM_DECL = ("  const uint16_t* b_lane = b + (lane >> 2) * b_ld + (lane & 3) * 2;  // b0 of column (lane / 4): k 2 (lane % 4)\n",
             "  // ldmatrix's row addresses: lane l gives column (l % 8) (+ 8 for l >= 16) at k 8 ((l / 8) % 2)\n"
             "  const uint16_t* b_ldsm = b + ((lane & 7) + (lane >> 4) * 8) * b_ld + ((lane >> 3) & 1) * 8;\n")


def make(name, edits):
    dest = out / name
    shutil.rmtree(dest, ignore_errors=True)
    for part in ("lltm_jit", "src"):
        shutil.copytree(tree / part, dest / part, ignore=shutil.ignore_patterns("__pycache__"))
    path = dest / "src" / "tensor_core.cuh"
    text = path.read_text()
    for old, new in edits:
        assert text.count(old) == 1, (name, old)
        text = text.replace(old, new)
    path.write_text(text)


make("unroll", [UNROLL])
make("ldsm", [LDSM_DECL, (LDSM_OLD, LDSM_NEW)])
make("both", [UNROLL, LDSM_DECL, (LDSM_OLD, LDSM_NEW)])
print("variants in", out)
