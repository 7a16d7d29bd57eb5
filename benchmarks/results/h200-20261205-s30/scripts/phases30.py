"""Session 30: session 29's phase timers (../../h200-20261205-s29/scripts/phases.py) on a tree
(argv[1]), plus, printed by the same threads as a "PHS" line (cycles summed over the steps): the
L2 exchange's "send" split in four (the arrival with whatever fence precedes it, the wait for the
group's counter, the gather's mbarrier arrival and proxy fence(s), the bulk copies' start; on main
the shared gather's fence of the cluster's shared memory falls in "copies"), and the update's
first part, to its last gate's sum of the splits' partial sums ("sums", from the update's start);
and, as a "PHB" line, the cluster backward's exchange to the end of its stores into the other
blocks ("stores"; the rest of "exchange" is the wait for theirs)."""
import subprocess
import sys
from pathlib import Path

tree = Path(sys.argv[1])
here = Path(__file__).resolve().parent
subprocess.run([sys.executable, str(here.parent.parent / "h200-20261205-s29/scripts/phases.py"), str(tree)], check=True)


def patch(name, edits):
    path = tree / "src" / name
    text = path.read_text()
    for old, new in edits:
        assert text.count(old) == 1, (name, old)
        text = text.replace(old, new)
    path.write_text(text)


patch("tensor_core.cuh", [
    ("                                            int sharing) {\n  while",
     "                                            int sharing, unsigned long long* sub = nullptr) {\n"
     "  const unsigned long long c0_ = clock64();\n  while"),
    ("  if (lane == 0) mbarrier_expect(gathered, static_cast<unsigned>(2 * rows * S));\n",
     "  const unsigned long long c1_ = clock64();\n"
     "  if (lane == 0) mbarrier_expect(gathered, static_cast<unsigned>(2 * rows * S));\n"),
    ("  if (sharing == 1) {\n", "  const unsigned long long c2_ = clock64();\n"
     "  if (sub) { sub[0] += c1_ - c0_; sub[1] += c2_ - c1_; }\n  if (sharing == 1) {\n"),
    ("2 * S, gathered);\n    return;\n",
     "2 * S, gathered);\n"
     "    if (sub) sub[2] += clock64() - c2_;\n    return;\n"),
    ("    bulk_copy_multicast(operand + r * ld, from + (b0 + r) * S, 2 * S, gathered, blocks);\n  }\n",
     "    bulk_copy_multicast(operand + r * ld, from + (b0 + r) * S, 2 * S, gathered, blocks);\n  }\n"
     "  if (sub) sub[2] += clock64() - c2_;\n"),
])
# main's arrival, or the tree's with the block's fence before it
ARRIVE = "      arrive(arrivals);\n"
if "operand_done_for_copies();\n      arrive" in (tree / "src/tensor_core_forward.cuh").read_text():
    ARRIVE = "      if (bulk) operand_done_for_copies();\n" + ARRIVE
patch("tensor_core_forward.cuh", [
    ("unsigned long long ph_[8]", "unsigned long long ph_[13]"),
    ("          return total;\n        },\n",
     "          if (g == 2 && ph_on_ && total != 1234.5f) ph_[12] += clock64() - tp_;\n          return total;\n        },\n"),
    (ARRIVE, "      const unsigned long long a0_ = clock64();\n" + ARRIVE + "      if (ph_on_) ph_[8] += clock64() - a0_;\n"),
    ("static_cast<int>(t + 1) * tiling.tiles, received, at.tile % sharing, sharing);",
     "static_cast<int>(t + 1) * tiling.tiles, received, at.tile % sharing, sharing, ph_on_ ? ph_ + 9 : nullptr);"),
    ("  PH_PRINT(\"fwd\", 0);\n",
     "  PH_PRINT(\"fwd\", 0);\n  if (ph_on_) printf(\"PHS sharing=%d blk=%u steps=%lld: arrive=%llu poll=%llu fence=%llu copies=%llu sums=%llu\\n\","
     " sharing, linear_block(), (long long)p.time, ph_[8], ph_[9], ph_[10], ph_[11], ph_[12]);\n"),
])
patch("tensor_core_backward.cuh", [
    ("unsigned long long ph_[8]", "unsigned long long ph_[9]"),
    ("      mbarrier_wait<Scope::kCluster>(bar, static_cast<unsigned>((p.time - 1 - t) / 2 % 2));\n",
     "      if (ph_on_) ph_[8] += clock64() - tp_;\n"
     "      mbarrier_wait<Scope::kCluster>(bar, static_cast<unsigned>((p.time - 1 - t) / 2 % 2));\n"),
    ("  PH_PRINT(\"bwd\", 0);\n",
     "  PH_PRINT(\"bwd\", 0);\n  if (ph_on_ && CLUSTER) printf(\"PHB blk=%u steps=%lld: stores=%llu\\n\", linear_block(),"
     " (long long)p.time, ph_[8]);\n"),
])
print("sub-phases patched")
