"""Host pieces of warm pruned searches, timed inside real searches (medians of 60, us), and the wall."""
import sys, time, collections
sys.path.insert(0, "scripts")
import numpy as np
import backends
from gpu_timing import case_plan
from backends.implementations import pruned as P, event_clock as E, staged as S, pycuda_base as B
from backends import protocol as PR

spent = collections.defaultdict(list)


def timed(owner, attr, name=None):
    import inspect
    raw = inspect.getattr_static(owner, attr)
    f = getattr(owner, attr)
    def g(*a, **k):
        t0 = time.perf_counter()
        try:
            return f(*a, **k)
        finally:
            spent[name or attr].append(1e6 * (time.perf_counter() - t0))
    if isinstance(raw, staticmethod):
        g = staticmethod(g)
    elif isinstance(raw, classmethod):
        f = raw.__func__
        g = classmethod(g)
    setattr(owner, attr, g)


for owner, attr in [(B.PyCUDABackend, "upload"), (P.PrunedBackend, "max_batch_periods"),
                    (P.PrunedBackend, "_staged_periods"), (P.PrunedBackend, "_fold"), (P.PrunedBackend, "_scan_arrays"),
                    (P.PrunedBackend, "_queue_batch"), (P.PrunedBackend, "_wait"), (E.EventClock, "settle"),
                    (P.PrunedBackend, "_results"), (S.Staged, "read"), (PR.PeriodStats, "from_gains"),
                    (P.pruning, "host_work"), (P.pruning, "add_work"), (P.PrunedBackend, "search_batches"),
                    (B.PyCUDABackend, "search")]:
    timed(owner, attr)
for case in ("tess", "k2"):
    plan, periods = case_plan(case)
    be = backends.get_backend("pruned")
    for _ in range(3):
        be.search(plan, periods)
    spent.clear()
    walls = []
    for _ in range(60):
        t0 = time.perf_counter(); be.search(plan, periods); walls.append(1e3 * (time.perf_counter() - t0))
    print(case, "wall ms", round(float(np.median(walls)), 3))
    print({k: round(float(np.median(v)), 1) for k, v in spent.items()})
    spent.clear()
