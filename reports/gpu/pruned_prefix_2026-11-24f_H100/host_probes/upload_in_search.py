"""Where a warm search's 'upload' stage goes, timed inside real searches (medians of 60, us)."""
import sys, time, collections
sys.path.insert(0, "scripts")
import numpy as np
import backends
from gpu_timing import case_plan
import pycuda.driver as cuda
from backends.implementations import pycuda_base as B, staged as S

spent = collections.defaultdict(list)


def timed(name, f):
    def g(*a, **k):
        t0 = time.perf_counter()
        try:
            return f(*a, **k)
        finally:
            spent[name].append(1e6 * (time.perf_counter() - t0))
    return g


B.PyCUDABackend.refuses = timed("refuses", B.PyCUDABackend.refuses)
B.PyCUDABackend.device_templates = timed("device_templates", B.PyCUDABackend.device_templates)
B.PyCUDABackend.upload = timed("upload", B.PyCUDABackend.upload)
B.Staged = timed("Staged(tyw)", S.Staged)
cuda_memcpy = cuda.memcpy_htod
cuda.memcpy_htod = timed("memcpy_htod", cuda_memcpy)
cuda_alloc = cuda.mem_alloc
cuda.mem_alloc = timed("mem_alloc", cuda_alloc)
for case in ("tess", "k2"):
    plan, periods = case_plan(case)
    be = backends.get_backend("pruned")
    for _ in range(3):
        be.search(plan, periods)
    spent.clear()
    for _ in range(60):
        be.search(plan, periods)
    print(case, {k: round(float(np.median(v)), 1) for k, v in spent.items()})
    spent.clear()
    with be.context():
        for _ in range(60):
            be.upload(plan)
    print(case, "hot loop", {k: round(float(np.median(v)), 1) for k, v in spent.items()})
    spent.clear()
