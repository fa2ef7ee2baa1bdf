"""Host costs of a warm pruned search's upload on the device machine (medians of 200, us)."""
import sys, time
sys.path.insert(0, "scripts")
import numpy as np
import backends
from gpu_timing import case_plan
import pycuda.driver as cuda
from backends.implementations.staged import Staged


def med(f, k=200):
    out = []
    for _ in range(k):
        t0 = time.perf_counter(); f(); out.append(time.perf_counter() - t0)
    return round(1e6 * float(np.median(out)), 1)


for case in ("tess", "k2"):
    plan, periods = case_plan(case)
    be = backends.get_backend("pruned")
    be.search(plan, periods)
    s = plan.lc.samples
    with be.context():
        pool_alloc = be._allocate
        d = cuda.mem_alloc(s.nbytes)
        pinned = cuda.pagelocked_empty(s.shape, s.dtype)
        row = {
            "bytes": s.nbytes,
            "upload()": med(lambda: be.upload(plan)),
            "refuses": med(lambda: be.refuses(plan)),
            "mem_alloc+free": med(lambda: cuda.mem_alloc(s.nbytes).free()),
            "pool allocate": med(lambda: pool_alloc(s.nbytes)),
            "htod sync": med(lambda: cuda.memcpy_htod(d, s)),
            "htod async pageable": med(lambda: (cuda.memcpy_htod_async(d, s), cuda.Context.synchronize())),
            "htod async pageable (no wait)": med(lambda: cuda.memcpy_htod_async(d, s)),
            "copy to pinned": med(lambda: np.copyto(pinned, s)),
            "htod async pinned (no wait)": med(lambda: cuda.memcpy_htod_async(d, pinned)),
            "Staged mem_alloc": med(lambda: Staged([("tyw", s)], cuda.mem_alloc)),
            "Staged pool": med(lambda: Staged([("tyw", s)], pool_alloc)),
            "device_templates": med(lambda: be.device_templates(plan.templates)),
        }
        cuda.Context.synchronize()
    print(case, row)
