"""Where the device idles between light curves in ``search_many``: 64 K2-like
curves of five baselines (``k2_like``, consecutive ones with other templates
objects) against 64 of one baseline (one templates object), alternating,
warm medians; the device's own time (chi2_scan by CUDA events); then
cProfile of one mixed ``search_many``, host functions by own time.

    PYTHONPATH=. python reports/host_path/2026-11-28_H100/between_curves.py [--backend pruned] [--rounds 5]
"""

import argparse
import cProfile
import io
import pstats
import statistics
import time

import backends
from benchmarks.host_path import k2_like, plans_of
from datasets import synthetic

ap = argparse.ArgumentParser()
ap.add_argument("--backend", default="pruned")
ap.add_argument("--rounds", type=int, default=5)
ap.add_argument("--n", type=int, default=64)
args = ap.parse_args()

mixed = plans_of(k2_like(args.n), {})
same = []
for k in range(args.n):
    lc = synthetic.simulate(seed=k, preset="k2", baseline=90.0, start=3000.0)
    same.append((lc.t, lc.y, lc.dy))
same = plans_of(same, {})
print("templates objects:", len({id(p.templates) for p, _ in mixed}), "mixed,",
      len({id(p.templates) for p, _ in same}), "same")

backend = backends.get_backend(args.backend)
for jobs in (mixed, same):
    backend.search_many(jobs)
    backend.synchronize()
walls = {"mixed": [], "same": []}
scans = {"mixed": [], "same": []}
for _ in range(args.rounds):
    for name, jobs in (("mixed", mixed), ("same", same)):
        backend.timings.clear()
        start = time.perf_counter()
        backend.search_many(jobs)
        backend.synchronize()
        walls[name].append(time.perf_counter() - start)
        scans[name].append(backend.timings.get("chi2_scan", 0.0))
for name in walls:
    w, s = statistics.median(walls[name]), statistics.median(scans[name])
    print(f"{name:5s}: {args.n / w:6.1f} curves/s, {w / args.n * 1e3:.3f} ms per curve, chi2_scan events "
          f"{s / args.n * 1e3:.3f} ms, the rest {(w - s) / args.n * 1e3:.3f} ms")

backend.timings.clear()
profile = cProfile.Profile()
profile.enable()
backend.search_many(mixed)
backend.synchronize()
profile.disable()
print("stages per curve, mixed, profiled (ms):",
      {k: round(v / args.n * 1e3, 3) for k, v in backend.timings.items()})
out = io.StringIO()
pstats.Stats(profile, stream=out).sort_stats("tottime").print_stats(35)
print(out.getvalue())
