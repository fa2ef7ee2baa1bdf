"""Two warm searches of one case by a pruned_period launch shape (for ncu:
profile the second pruned_period launch)."""
import sys
sys.path.insert(0, "scripts"); sys.path.insert(0, "_ab")
import occupancy  # noqa: F401  (registers the k2n cases)
from gpu_timing import case_plan
from pruned_variants import variant_backend

case, block = sys.argv[1], int(sys.argv[2])
plan, periods = case_plan(case)
b = variant_backend(block, 2)
b.search(plan, periods)
b.search(plan, periods)
