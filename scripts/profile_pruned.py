"""One warm pruned search of the K2-like or TESS-like timing case, for Nsight
Compute (``ncu -k regex:pruned python scripts/profile_pruned.py k2``)."""

import sys

import backends
from gpu_timing import case_plan  # scripts/ is on sys.path when run as a script

case = sys.argv[1] if len(sys.argv) > 1 else "k2"
plan, periods = case_plan(case)
backend = backends.get_backend("pruned")
backend.search(plan, periods[:64])  # compile outside the profiled launches
backend.search(plan, periods)
