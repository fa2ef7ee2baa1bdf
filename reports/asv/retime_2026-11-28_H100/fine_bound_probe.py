"""pruned's K-piece bound, linear ('auto') against constant pieces, on asv's cases (benchmarks.cases): warm
medians of 7 of the whole search (wall, ms) and of its chi2_scan stage (events, ms), two alternations each."""
import statistics as st
import time

import backends
from benchmarks.cases import case

for n, p in [(500, 100000), (2000, 100000), (1000, 100000), (4320, 10000), (2000, 10000)]:
    c = case(n, p)
    out = {}
    for fb in ['auto', 'constant', 'auto', 'constant']:
        b = backends.registry.backend_class('pruned')(fine_bound=fb)
        backends.search(c.t, c.y, c.dy, backend=b, **c.options)
        w, g = [], []
        for _ in range(7):
            b.timings.clear()
            t0 = time.perf_counter()
            backends.search(c.t, c.y, c.dy, backend=b, **c.options)
            w.append(time.perf_counter() - t0)
            g.append(b.timings.get('chi2_scan', 0))
        out.setdefault(fb, []).append((round(1e3 * st.median(w), 2), round(1e3 * st.median(g), 2)))
    print(n, p, out, flush=True)
