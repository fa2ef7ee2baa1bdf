"""The depth floor's exactness check on the device (run from the repository root
with a patch applied): ``pruned`` in debug mode against ``cpu`` on timing cases,
every STEP-th period, printing each search's work counts (bound_violations
must be 0). The shared layout's run was ``k2:3 k2:1``, the global layout's
``tess:1 tess78:4``.

    python floor_check.py CASE:STEP [CASE:STEP ...]
"""
import os
import sys

sys.path[:0] = [os.getcwd(), os.path.join(os.getcwd(), "scripts")]
import numpy as np  # noqa: E402

import backends  # noqa: E402
from backends import contract  # noqa: E402
from gpu_timing import case_plan  # noqa: E402

for spec in sys.argv[1:]:
    case, step = spec.split(":")
    plan, periods = case_plan(case)
    periods = periods[::int(step)]
    ref = backends.get_backend("cpu").search(plan, periods)
    gpu = backends.registry.backend_class("pruned")(debug=True)
    got = gpu.search(plan, periods)
    contract.assert_exact(got, ref, "pruned debug vs cpu")
    np.testing.assert_array_equal(got.rows, ref.rows)
    layout = "shared" if gpu.folds_in_scan(plan) else "global"
    print(case, periods.size, f"periods ({layout}): exact; work", {k: int(v) for k, v in gpu.work.items()}, flush=True)
