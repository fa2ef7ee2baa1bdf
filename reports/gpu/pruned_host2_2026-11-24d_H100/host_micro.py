"""Host costs of a warm search's pieces on the device machine's CPU (no wrapping): packing, copies,
the scan arrays' preparation, mem_get_info, the results' statistics. Medians of 200, microseconds."""
import sys, time
sys.path.insert(0, "scripts")
import numpy as np
from types import SimpleNamespace
from gpu_timing import case_plan
import pycuda.driver as cuda
from backends.implementations import pruned as P
from backends.protocol import PeriodStats


def med(f, k=200):
    for _ in range(10):
        f()
    out = []
    for _ in range(k):
        t = time.perf_counter(); f(); out.append(time.perf_counter() - t)
    return 1e6 * float(np.median(out))


be = P.PrunedBackend()
with be.context():
    for case in ("tess", "k2"):
        plan, periods = case_plan(case)
        lo, hi = plan.width_windows(periods)
        n = plan.lc.size
        t, y, w = plan.lc.t, plan.lc.y, plan.lc.w
        packed = np.stack([t, y, w])
        pinned = cuda.pagelocked_empty(3 * 8 * n, np.uint8)
        dev = cuda.mem_alloc(3 * 8 * n)
        row = {}
        row["np.zeros(24n)"] = med(lambda: np.zeros(24 * n, np.uint8))
        row["np.zeros+fill"] = med(lambda: [h := np.zeros(24 * n, np.uint8)] and [h[8 * n * i:8 * n * (i + 1)].view(np.float64).__setitem__(slice(None), a) for i, a in enumerate((t, y, w))])
        row["fill pinned"] = med(lambda: [pinned[8 * n * i:8 * n * (i + 1)].view(np.float64).__setitem__(slice(None), a) for i, a in enumerate((t, y, w))])
        row["memcpy_htod packed (sync)"] = med(lambda: cuda.memcpy_htod(dev, packed))
        row["memcpy_htod 3 rows (sync)"] = med(lambda: [cuda.memcpy_htod(int(dev) + 8 * n * i, a) for i, a in enumerate((t, y, w))])
        row["memcpy_htod_async pinned"] = med(lambda: cuda.memcpy_htod_async(dev, pinned))
        row["mem_alloc+free 24n"] = med(lambda: cuda.mem_alloc(24 * n).free())
        row["mem_get_info"] = med(cuda.mem_get_info)
        be._allocate(1)
        state = SimpleNamespace(shared=False, base=SimpleNamespace(m=n + plan.templates.maxwidth, plan=plan))
        row["_scan_arrays"] = med(lambda: be._scan_arrays(state, periods, lo, hi))
        b = len(periods)
        g, idx, dep = np.random.rand(b), np.zeros(b, np.int32), np.random.rand(b)
        row["from_gains"] = med(lambda: PeriodStats.from_gains(plan, g, idx, dep))
        print(case, "n", n, "periods", b)
        for k, v in row.items():
            print(f"  {k:32s} {v:9.1f} us")
