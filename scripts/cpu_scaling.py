"""CPU backend: microseconds per period on 1, 4, 8, 16 numba threads (K2-like case)."""
import time, numba, warnings
warnings.simplefilter("ignore")
from backends.implementations.cpu import CPUBackend
from gpu_timing import case_plan
print("threading layer config:", numba.config.THREADING_LAYER, "threads", numba.get_num_threads())
plan, periods = case_plan("k2")
b = CPUBackend(); b.search(plan, periods[:50])
print("layer used:", numba.threading_layer())
for nt in (1, 4, 8, 16):
    numba.set_num_threads(nt)
    sub = periods[::4] if nt > 1 else periods[::40]
    t0 = time.perf_counter(); b.search(plan, sub); dt = time.perf_counter() - t0
    print(f"threads {nt}: {dt/sub.size*1e6:.0f} us/period wall, x{nt} = {dt/sub.size*1e6*nt:.0f} core-us/period", flush=True)
