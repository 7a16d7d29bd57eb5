"""Session 43: each SASS instruction's control bits, decoded from `cuobjdump -sass`'s encodings
(the high word's bits 41-61 on Volta and later: stall cycles, yield, the scoreboard its result
sets (W, 7: none), the one its source reads set (R), the scoreboards it waits for (a mask, SB5 to
SB0), reuse), one line each, optionally only those matching a regular expression:

    cuobjdump -sass kernel.o > k.sass; python3 ctrl_bits.py k.sass 0 "LDSM|HMMA|BAR"
"""
import re, sys
lines = open(sys.argv[1]).read().splitlines()
pat = re.compile(r"/\*([0-9a-f]{4})\*/\s+(.*?);\s*/\* (0x[0-9a-f]{16}) \*/")
hi = re.compile(r"^\s*/\* (0x[0-9a-f]{16}) \*/")
out = []
for i, l in enumerate(lines):
    m = pat.search(l)
    if not m: continue
    h = hi.search(lines[i + 1])
    if not h: continue
    w = int(h.group(1), 16)
    ctrl = w >> 41
    stall = ctrl & 0xf; yld = (ctrl >> 4) & 1; wb = (ctrl >> 5) & 7; rb = (ctrl >> 8) & 7; wait = (ctrl >> 11) & 0x3f
    f = lambda b: "-" if b == 7 else str(b)
    out.append(f"{m.group(1)} S{stall:02d} Y{yld} W{f(wb)} R{f(rb)} wait{wait:06b}  {m.group(2).strip()}")
pick = [o for o in out if re.search(sys.argv[3], o)] if len(sys.argv) > 3 else out
print("\n".join(pick))
