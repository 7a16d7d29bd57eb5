"""Session 23: an ncu source-page listing (`--page source --print-source sass --csv`, one kernel)
mapped to source lines through `nvdisasm -g` of the cubins that hold the kernel (built with
-lineinfo): the stall reasons overall, the lines with the most warp-stall samples, and the top
instructions with their line and main stall reasons.

    python3 sass_lines.py listing.csv disasm.txt [N]
"""
import collections
import csv
import re
import sys

top = int(sys.argv[3]) if len(sys.argv) > 3 else 30
header, rows = None, []
with open(sys.argv[1], newline="") as f:
    for row in csv.reader(f):
        if "Source" in row and "Address" in row:
            header, rows = row, []
        elif header is not None and len(row) == len(header):
            rows.append(dict(zip(header, row)))
ALL = "Warp Stall Sampling (All Samples)"
REASONS = [c for c in header if c.startswith("stall_") and "Not Issued" not in c]


def value(r, column=ALL):
    try:
        return float(r[column])
    except ValueError:
        return 0.0


def opcode(text):
    text = re.sub(r"^@!?U?P\w+\s+", "", text.strip())
    return text.split()[0].split(".")[0] if text else ""


# nvdisasm -g: functions, each a list of (opcode, file:line)
functions, current, where = {}, None, "?"
for line in open(sys.argv[2]):
    m = re.match(r"\s*\.text\.(\S+):", line)
    if m:
        current = functions.setdefault(m.group(1), [])
        continue
    m = re.search(r'//## File "([^"]+)", line (\d+)', line)
    if m:
        where = f"{m.group(1).rsplit('/', 1)[-1]}:{m.group(2)}"
        continue
    m = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?);", line)
    if m and current is not None:
        current.append((opcode(m.group(2)), where))

ops = [opcode(r["Source"]) for r in rows]
best = max((n for n, b in functions.items() if len(b) == len(ops)),
           key=lambda n: sum(a == b[0] for a, b in zip(ops, functions[n])))
body = functions[best]
total = sum(value(r) for r in rows)
print(f"# {len(rows)} instructions: {best}, {total:.0f} samples")
reasons = collections.Counter({c[6:]: sum(value(r, c) for r in rows) for c in REASONS})
print("# stall reasons: " + ", ".join(f"{c} {100 * n / total:.1f}%" for c, n in reasons.most_common(8)))
by_line = collections.Counter()
for r, (_, at) in zip(rows, body):
    by_line[at] += value(r)
print("# by source line:")
for at, n in by_line.most_common(top):
    print(f"{100 * n / max(total, 1):5.1f}%  {at}")
print("# top instructions (index, line, SASS, main reasons):")
for i in sorted(range(len(rows)), key=lambda i: value(rows[i]), reverse=True)[:top]:
    s = value(rows[i])
    main = sorted(((value(rows[i], c), c[6:]) for c in REASONS), reverse=True)[:3]
    print(f"{100 * s / max(total, 1):5.1f}%  {i:5d}  {body[i][1]:>30}  {rows[i]['Source'].strip()[:44]:44} | "
          + ", ".join(f"{n} {100 * v / max(s, 1):.0f}%" for v, n in main if v > 0))
