import sys, os
sys.path[:0] = [os.getcwd(), os.path.join(os.getcwd(), "scripts")]
import numpy as np, backends
from backends import contract
from gpu_timing import case_plan
for case, step in (("k2", 3), ("k2", 1)):
    plan, periods = case_plan(case)
    periods = periods[::step]
    ref = backends.get_backend("cpu").search(plan, periods)
    gpu = backends.registry.backend_class("pruned")(debug=True)
    got = gpu.search(plan, periods)
    contract.assert_exact(got, ref, "pruned debug vs cpu")
    np.testing.assert_array_equal(got.rows, ref.rows)
    print(case, periods.size, "periods: exact; work", {k: int(v) for k, v in gpu.work.items()}, flush=True)
