"""Session 19: the SASS instructions with the most warp-stall samples in each kernel of an
`ncu --section SourceCounters --page source --print-source sass --csv` listing.

    python3 sass_top.py listing.csv [N]
"""
import csv
import sys

top = int(sys.argv[2]) if len(sys.argv) > 2 else 30
tables, header = [], None
with open(sys.argv[1], newline="") as f:
    for row in csv.reader(f):
        if "Source" in row and "Address" in row:
            header = row
            tables.append([])
        elif header is not None and len(row) == len(header):
            tables[-1].append(dict(zip(header, row)))
for n, rows in enumerate(tables):
    column = next(c for c in rows[0] if "Sampling" in c and "All" in c) if rows else None
    if column is None:
        continue

    def samples(r):
        try:
            return float(r[column])
        except ValueError:
            return 0.0

    total = sum(samples(r) for r in rows)
    print(f"# kernel {n}: total samples {total:.0f}, instructions {len(rows)} ({column})")
    for r in sorted(rows, key=samples, reverse=True)[:top]:
        print(f"{100 * samples(r) / max(total, 1):5.1f}%  {r['Address']:>8}  {r['Source']}")
