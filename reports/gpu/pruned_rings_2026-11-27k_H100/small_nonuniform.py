"""pruned on a 3,000-point K2-like curve whose errors differ by up to 20 %:
the largest such fold pruned_period holds (weights in shared memory), warm
median of 15 and the chi2_scan stage; run from a tree's root."""
import json, sys, time
sys.path[:0] = [".", "scripts"]
import numpy as np
import backends
from datasets import synthetic
from gpu_timing import time_backend
lc = synthetic.simulate(seed=1, start=3000.0, preset="k2", ndata=3000)
dy = lc.dy * (1 + np.random.default_rng(2).uniform(0.0, 0.2, lc.dy.size))
plan, periods = backends.make_plan(lc.t, lc.y, dy)
b = backends.get_backend("pruned")
assert plan.lc.uniform_weight == 0 and b.folds_in_scan(plan)
print(json.dumps(dict(zip(("cold_s", "warm_median_s", "warm_min_s", "stages"), time_backend("pruned", plan, periods, 15)))))
