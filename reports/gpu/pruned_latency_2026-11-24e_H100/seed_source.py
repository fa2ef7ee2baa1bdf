"""TESS-like warm searches alternating pruned_seed's cumulative flux from
shared memory (as shipped) and from global memory (SEED_CS_BYTES = 0): seed
stage and search medians of 21 per side, three rounds."""
import sys
import time

sys.path.insert(0, "scripts")
import numpy as np

import backends
from backends.implementations import pruned as P
from gpu_timing import case_plan

plan, periods = case_plan("tess")
shipped = P.SEED_CS_BYTES
for rnd in range(3):
    for label, limit in (("shared", shipped), ("global", 0)):
        P.SEED_CS_BYTES = limit
        be = backends.get_backend("pruned")
        be.search(plan, periods)
        walls, seeds = [], []
        for _ in range(21):
            be.timings.clear()
            t0 = time.perf_counter()
            be.search(plan, periods)
            walls.append(time.perf_counter() - t0)
            seeds.append(be.timings["chi2_scan.seed"])
        print(f"round {rnd} {label}: search {1e3 * np.median(walls):.3f} ms, seeds {1e3 * np.median(seeds):.3f} ms",
              flush=True)
