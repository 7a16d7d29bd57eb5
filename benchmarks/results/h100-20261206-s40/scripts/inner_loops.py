"""The loops inside each kernel's step loop (its longest backward branch) in nvdisasm's output,
with their instruction and load counts and the source lines most of their instructions come from:
where a loop of runtime count sits inside a step, its iterations run one after another.

    nvcc -O3 -std=c++17 -arch=sm_90a -lineinfo --expt-relaxed-constexpr -I src -cubin -o k.cubin src/FILE.cu
    nvdisasm -g -c k.cubin > k.sass && python3 inner_loops.py k.sass
"""
import collections
import re
import sys

INSTRUCTION = re.compile(r"\s+/\*[0-9a-f]{4}\*/")

text = open(sys.argv[1]).read()
for section in re.split(r"\n\s*\.section\s+\.text\.", text)[1:]:
    name, lines = section.split(",")[0], section.split("\n")
    labels = {m.group(1): i for i, line in enumerate(lines) for m in [re.match(r"^(\.L_x_\d+):", line)] if m}
    loops = [(labels[m.group(1)], i) for i, line in enumerate(lines)
             for m in [re.search(r"BRA `\((\.L_x_\d+)\)", line)] if m and m.group(1) in labels and labels[m.group(1)] < i]
    if not loops:
        continue
    first, last = max(loops, key=lambda loop: loop[1] - loop[0])
    source, sources = None, {}
    for i, line in enumerate(lines):
        m = re.search(r'## File "[^"]*/([^"/]+)", line (\d+)', line)
        if m:
            source = f"{m.group(1)}:{m.group(2)}"
        sources[i] = source
    print("==", name)
    for begin, end in sorted(loops):
        if first < begin and end < last:
            body = [i for i in range(begin, end + 1) if INSTRUCTION.match(lines[i])]
            loads = sum(1 for i in body if re.search(r"\b(LDS|LDG|LD\.|LDL)", lines[i]))
            where = collections.Counter(sources[i] for i in body).most_common(4)
            print(f"  {len(body)} instructions, {loads} loads:", ", ".join(f"{k} x{v}" for k, v in where))
