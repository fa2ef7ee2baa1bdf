"""One tree's pruned search timed warm (run from the tree's root): case, repeats -> JSON line."""
import json, sys, time
import numpy as np
sys.path.insert(0, "scripts")
import backends
from backends import pruning
from gpu_timing import case_plan

case, reps = sys.argv[1], int(sys.argv[2])
plan, periods = case_plan(case)
b = backends.registry.backend_class("pruned")()
first = b.search(plan, periods)
if sys.argv[3:] == ["check"]:
    from backends import contract
    contract.assert_exact(first, backends.get_backend("cpu").search(plan, periods), "vs cpu")
work = pruning.work_summary(b.work)
wall, kern = [], []
for _ in range(reps):
    b.timings.clear()
    t0 = time.perf_counter()
    b.search(plan, periods)
    wall.append(time.perf_counter() - t0)
    kern.append(sum(s for k, s in b.timings.items() if k.startswith("chi2")))
print(json.dumps({"case": case, "wall_median_ms": 1e3 * float(np.median(wall)),
                  "kernel_median_ms": 1e3 * float(np.median(kern)), "work": work}))
