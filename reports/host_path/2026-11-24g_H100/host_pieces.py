import sys, time, cProfile, pstats, os
sys.path.insert(0, os.getcwd())
import numpy as np
import backends
from backends import statistics as S, running_median as RM
from benchmarks.host_path import Replay, k2_like, plans_of
curves = k2_like(16)
replay = Replay(curves, backends.get_backend("cpu"))
plans = plans_of(curves, {})
def timeit(f, n=20):
    f(); ts=[]
    for _ in range(n):
        t=time.perf_counter(); f(); ts.append(time.perf_counter()-t)
    return np.median(ts)*1e6
p, per = plans[0]
found = replay.search(p, per)
SR, pr, sde = S._raw_power(found.chi2)
print("argsort us %.0f sort us %.0f" % (timeit(lambda: np.argsort(pr)), timeit(lambda: np.sort(pr))))
print("running_median us %.0f" % timeit(lambda: RM.running_median(pr, 91)))
print("tls_results lean us %.0f full us %.0f" % (timeit(lambda: S.tls_results(p, found, True)), timeit(lambda: S.tls_results(p, found, False))))
stats = [replay.search(pp, pe) for pp, pe in plans]
pr_ = cProfile.Profile(); pr_.enable()
for _ in range(5):
    for (pp, pe), st in zip(plans, stats): S.tls_results(pp, st, True)
pr_.disable()
pstats.Stats(pr_).sort_stats("tottime").print_stats(22)
np.show_config()
