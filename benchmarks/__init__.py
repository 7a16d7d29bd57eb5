"""The benchmark behind bench.py.

timing.py    interleaved samples of several steps, CUDA graph capture, the machine's peaks
cases.py     what a kind of case provides (backends, check, floor) and the run: check, then time
step.py      the LLTM step: its size, case, backends, check and floor
sequence.py  a whole sequence of LLTM steps: its size, case, backends, check, floor, peak memory
report.py    one record per result, shown as a table, saved as JSON, plotted
"""
