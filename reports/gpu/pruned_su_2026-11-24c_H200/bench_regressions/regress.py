"""Warm medians of the asv EndToEnd search for a few (backend, ndata, nperiods)."""
import sys, time
import numpy as np
sys.path.insert(0, ".")
from benchmarks.bench_search import search
cases = [("thrust", 500, 1000), ("thrust", 2000, 1000), ("cpu", 2000, 1000), ("cupy", 4320, 1000), ("numba", 500, 10000)]
if sys.argv[1:]:
    cases = [(a, int(b), int(c)) for a, b, c in (x.split(":") for x in sys.argv[1:])]
for name, nd, np_ in cases:
    search(name, nd, np_)
    ts = []
    for _ in range(9):
        t0 = time.perf_counter(); search(name, nd, np_); ts.append(time.perf_counter() - t0)
    print(f"{name:8s} {nd:6d} {np_:7d} median {1e3*np.median(ts):8.2f} ms  min {1e3*min(ts):8.2f}", flush=True)
