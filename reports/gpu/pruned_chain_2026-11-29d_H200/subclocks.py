"""Stage clocks with the fold's sub-clocks (a temporary patch's slots after N_FLUSHES)."""
import os, sys
sys.path.insert(0, "scripts")
os.environ["TLS_NVCC_FLAGS"] = (os.environ.get("TLS_NVCC_FLAGS", "") + " -DSTAGE_CLOCKS").strip()
import numpy as np
import pycuda.driver as cuda
import backends
from gpu_timing import case_plan
plan, periods = case_plan("k2")
backend = backends.get_backend("pruned")
backend.search(plan, periods[:64])
block = backend.shared_block
with backend.context():
    clocks, size = backend.module(block).get_global("stage_clocks")
    cuda.memset_d8(clocks, 0, size)
backend.search(plan, periods)
with backend.context():
    c = np.empty(size // 8, np.uint64); cuda.memcpy_dtoh(c, clocks)
names = ["fold", "prefix", "seeds", "coarse(+flush)", "flush", "fine", "exact", "n_flushes", "fold:keys", "fold:sort", "fold:gather"]
print(os.environ["TLS_NVCC_FLAGS"])
for n, v in zip(names, c.astype(float)): print(f"  {n:16s} {v / len(periods):10.0f}")
