"""cupy at the flagged sizes: end to end (asv's search) and the backend's own search of the case's plan."""
import sys, time
import numpy as np
sys.path.insert(0, ".")
import backends
from benchmarks.bench_search import search
from benchmarks.cases import case
for nd, npd in [(500, 1000), (4320, 1000)]:
    search("cupy", nd, npd)
    e2e = []
    for _ in range(15):
        t0 = time.perf_counter(); search("cupy", nd, npd); e2e.append(time.perf_counter() - t0)
    c = case(nd, npd)
    b = backends.get_backend("cupy"); b.search(c.plan, c.periods)
    ws = []
    for _ in range(15):
        b.timings.clear(); t0 = time.perf_counter(); b.search(c.plan, c.periods); ws.append(time.perf_counter() - t0)
    print(f"cupy {nd}x{npd}: e2e median {1e3*np.median(e2e):.2f} ms, search median {1e3*np.median(ws):.2f} ms, stages {dict((k, round(v*1e3,3)) for k, v in b.timings.items())}", flush=True)
