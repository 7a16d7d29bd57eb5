"""Session 29: the phase lines of phases_run.py's last repetition of each size and kind, as cycles a
step. Forward phases: product (warp 0), block barrier, update, exchange out, stores + next
projection loads, wait for the group. Backward: gate gradients, barrier, product, barrier,
exchange (stores and wait), take d_h."""
import re
import sys

FWD = ["product", "barrier", "update", "send", "store+load", "wait"]
BWD = ["cells", "barrier", "product", "barrier", "exchange", "take_dh"]
last = {}
head = None
for line in open(sys.argv[1]):
    if line.startswith("== ") and " rep " in line:
        head = line[3:].strip()
        last_rep = head.endswith("rep 2")
        continue
    m = re.match(r"PH (fwd|bwd) R=(\d+) (?:held=\d )?cl=(\d) tiles=(\d+) w=(\d+) sl=(\d+) blk=(\d+) steps=(\d+): (.*)", line)
    if m and head and head.endswith("rep 2"):
        kind, R, cl, tiles, w, sl, blk, steps = m.groups()[:8]
        vals = [int(v) / int(steps) for v in m.group(9).split()][:6]
        names = FWD if kind == "fwd" else BWD
        spec = head.rsplit(" rep", 1)[0]
        print(f"{spec:34s} {kind} R={R} cluster={cl} tiles={tiles} width={w} slices={sl} block {blk:>4s}: "
              + " ".join(f"{n}={v:.0f}" for n, v in zip(names, vals)) + f" total={sum(vals):.0f}")
    elif line.startswith("== wall") and head and head.endswith("rep 2"):
        print(f"{head.rsplit(' rep', 1)[0]:34s} {line[3:].strip()}")
