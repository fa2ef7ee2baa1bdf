"""The asv EndToEnd pruned cases, timed here: end to end (backends.search) and the backend's search with stages and work."""
import sys, time, json
import numpy as np
import backends
from benchmarks.cases import case
from backends.implementations.pycuda_base import KERNELS
rows = []
for nd, npd in [(20000, 10000), (100000, 1000), (20000, 1000), (4320, 10000)]:
    c = case(nd, npd)
    backends.search(c.t, c.y, c.dy, backend="pruned", **c.options)
    e2e = []
    for _ in range(11):
        t0 = time.perf_counter(); backends.search(c.t, c.y, c.dy, backend="pruned", **c.options); e2e.append(time.perf_counter() - t0)
    b = backends.registry.backend_class("pruned")()
    b.search(c.plan, c.periods)
    ws = []
    for _ in range(11):
        b.timings.clear(); b.work.clear()
        t0 = time.perf_counter(); b.search(c.plan, c.periods); ws.append(time.perf_counter() - t0)
    st = {k: round(v * 1e3, 3) for k, v in b.timings.items()}
    print(f"{nd}x{npd}: e2e {np.median(e2e)*1e3:.2f} ms search {np.median(ws)*1e3:.2f} ms uniform={c.plan.lc.uniform_weight>0} stages {st}")
    print("   work", dict(b.work))
