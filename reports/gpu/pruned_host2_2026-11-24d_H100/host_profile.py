"""cProfile of warm pruned searches (host side; the device wait shows as the event synchronize)."""
import cProfile, pstats, sys
sys.path.insert(0, "scripts")
import backends
from gpu_timing import case_plan

case = sys.argv[1] if len(sys.argv) > 1 else "tess"
plan, periods = case_plan(case)
be = backends.get_backend("pruned")
for _ in range(5):
    be.search(plan, periods)
pr = cProfile.Profile()
pr.enable()
for _ in range(50):
    be.search(plan, periods)
pr.disable()
st = pstats.Stats(pr)
st.sort_stats("tottime").print_stats(40)
