"""search_batch's fill and drain on a machine without a GPU: 64 K2-like light
curves (``benchmarks.host_path.k2_like``) whose statistics ``cpu`` found
beforehand are handed back after ``GPU_S`` seconds each with the GIL released
(as a CUDA event's synchronize releases it), so the host's full work runs as it
would beside a device. Prints end to end against nominal (64 x GPU_S) and
against ``search_many`` of the same stand-in.

    PYTHONPATH=. python reports/host_path/2026-11-28_H100/fill_study.py 0.0085 full [stats.pkl]

The statistics take ~3 min on 2 cores; a third argument caches them.
"""

import os
import pickle
import statistics
import sys
import time

import backends
from benchmarks.host_path import _key, k2_like, plans_of

GPU_S, lean = float(sys.argv[1]), sys.argv[2] == "lean"
cache = sys.argv[3] if len(sys.argv) > 3 else None
curves = k2_like(64)
plans = plans_of(curves, {})
if cache and os.path.exists(cache):
    found = pickle.load(open(cache, "rb"))
else:
    found = backends.get_backend("cpu").search_many(plans)
    if cache:
        pickle.dump(found, open(cache, "wb"))
by_key = {_key(p): s for (p, _), s in zip(plans, found)}


class Waiting(backends.TLSBackend):
    name, exact, device = "cpu", True, "cpu"

    def search(self, plan, periods, progress=None):
        time.sleep(GPU_S)
        return by_key[_key(plan)]


def median_s(run, repeats=5):
    run()
    walls = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        walls.append(time.perf_counter() - start)
    return statistics.median(walls)


backend = Waiting()
batch = median_s(lambda: backends.search_batch(curves, backend=backend, lean=lean))
many = median_s(lambda: backend.search_many(plans))
print(f"device {GPU_S * 1e3:.1f} ms per curve, lean={lean}: {64 / batch:.1f} curves/s end to end, "
      f"{64 * GPU_S / batch:.3f} of nominal, {many / batch:.3f} of search_many ({64 / many:.1f} curves/s)")
