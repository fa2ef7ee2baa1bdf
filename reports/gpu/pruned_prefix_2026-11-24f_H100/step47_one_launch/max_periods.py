"""K2-like warm searches with pruned_period's periods per launch (MAX_PERIODS) alternated in one process."""
import sys
sys.path.insert(0, "scripts")
import backends.implementations.pruned as P
from gpu_timing import case_plan, time_backend

plan, periods = case_plan("k2")
for rnd in range(2):
    for limit in (4096, 16384, 3300, 4096, 16384):
        P.MAX_PERIODS = limit
        cold, med, mn, st = time_backend("pruned", plan, periods, 21, clear=False)
        print(f"round {rnd} MAX_PERIODS {limit}: warm median {1e3 * med:.3f} ms, min {1e3 * mn:.3f} ms, "
              f"kernel {1e3 * st['chi2_scan']:.3f} ms", flush=True)
