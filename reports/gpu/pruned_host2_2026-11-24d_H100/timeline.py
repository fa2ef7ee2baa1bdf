"""Where a warm pruned search's wall time goes on the host: timestamps of wrapped calls (the thirteenth session's, tolerant of names one side lacks)."""
import sys, time, collections
sys.path.insert(0, "scripts")
import numpy as np
import backends
from gpu_timing import case_plan
from backends.implementations import pruned as P, staged as S, pycuda_base as B, event_clock as E
import os
import pycuda.driver as cuda

if os.environ.get("SPIN") == "1":  # experiment: the wait polls the event instead of cuEventSynchronize
    def spin_wait(done, size, progress):
        while not done.query():
            pass
        if progress is not None:
            progress(size)
    P.PrunedBackend._wait = staticmethod(spin_wait)

log = []
def wrap(owner, name, label=None):
    if not hasattr(owner, name):  # the other side of an ABA may not have it
        return
    f = getattr(owner, name)
    label = label or f"{owner.__name__}.{name}"
    def g(*a, **k):
        t0 = time.perf_counter(); r = f(*a, **k); log.append((label, t0, time.perf_counter())); return r
    if isinstance(getattr(owner, "__dict__", {}).get(name), staticmethod):
        g = staticmethod(g)
    setattr(owner, name, g)

for owner, names in [(P.PrunedBackend, ["upload", "max_batch_periods", "_scan_arrays", "_fold", "_scan_global",
                                        "_results", "_wait", "search_batches", "_staged_periods"]),
                     (B.PyCUDABackend, ["refuses", "device_templates", "folds_in_scan", "function"]),
                     (S.Staged, ["__init__", "read", "write"]), (E.EventClock, ["settle"]),
                     (backends.pruning, ["add_work", "tuning"]), (P, ["width_groups"])]:
    for n in names:
        wrap(owner, n)
wrap(cuda, "mem_get_info", "cuda.mem_get_info")
wrap(cuda, "memcpy_htod", "cuda.memcpy_htod"); wrap(cuda, "memcpy_dtoh", "cuda.memcpy_dtoh")
wrap(cuda, "mem_alloc", "cuda.mem_alloc"); wrap(cuda, "memcpy_htod_async", "cuda.memcpy_htod_async")
orig_mark = E.mark
def mk(*a):
    t0 = time.perf_counter(); r = orig_mark(*a); log.append(("event_clock.mark", t0, time.perf_counter())); return r
E.mark = mk; P.mark = mk

for case in sys.argv[1:] or ["tess", "k2"]:
    plan, periods = case_plan(case)
    be = backends.get_backend("pruned")
    for _ in range(3): be.search(plan, periods)
    N = 20
    tot = collections.defaultdict(float); cnt = collections.Counter()
    walls = []
    for _ in range(N):
        log.clear(); be.timings.clear()
        t0 = time.perf_counter(); be.search(plan, periods); t1 = time.perf_counter()
        walls.append(t1 - t0)
        for label, a, b in log:
            tot[label] += b - a; cnt[label] += 1
        first = min(a for l, a, b in log if l.endswith("_fold")) if any(l.endswith("_fold") for l, *_ in log) else None
        waits = [(a, b) for l, a, b in log if l.endswith("_wait")]
    ev = {k: round(v * 1e3, 3) for k, v in be.timings.items()}
    print(f"\n{case}: wall median {np.median(walls)*1e3:.3f} ms min {min(walls)*1e3:.3f}; events of last {ev}")
    # last search's timeline
    t0 = min(a for _, a, _ in log)
    for label, a, b in sorted(log, key=lambda x: x[1]):
        print(f"  {1e3*(a-t0):8.3f} {1e3*(b-a):8.3f}  {label}")
    print("  totals per search (ms, count):")
    for label in sorted(tot, key=lambda l: -tot[l]):
        print(f"    {label:40s} {1e3*tot[label]/N:8.3f} {cnt[label]//N}")
