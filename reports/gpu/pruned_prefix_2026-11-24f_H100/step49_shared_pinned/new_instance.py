"""Warm pruned searches through backends.search with the backend's name (a new instance per call, as asv's
EndToEnd), medians of 15, ms, in the tree on sys.path."""
import sys, time
import numpy as np
from benchmarks.bench_search import search

row = []
for n, p in ((2000, 1000), (4320, 1000), (2000, 10000), (4320, 10000)):
    search("pruned", n, p)
    out = []
    for _ in range(15):
        t0 = time.perf_counter(); search("pruned", n, p); out.append(time.perf_counter() - t0)
    row.append(f"({n}, {p}) {1e3 * np.median(out):.2f}")
print(sys.argv[1], "  ".join(row), flush=True)
