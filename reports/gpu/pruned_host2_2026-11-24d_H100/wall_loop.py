"""Warm search walls of one case in a bare loop (no wrappers), gc on and off, and after the K2-like
case has run in the process (as gpu_timing.py orders them): which explains gpu_timing's extra ~0.3 ms."""
import gc, sys, time
sys.path.insert(0, "scripts")
import numpy as np
import backends
from gpu_timing import case_plan, time_backend

plans = {case: case_plan(case) for case in ("k2", "tess")}


def walls(be, plan, periods, n=40):
    out = []
    for _ in range(n):
        be.timings.clear(); be.work.clear()
        t = time.perf_counter(); be.search(plan, periods); out.append(time.perf_counter() - t)
    return 1e3 * np.median(out), 1e3 * np.min(out)


be = backends.get_backend("pruned")
plan, periods = plans["tess"]
for _ in range(3):
    be.search(plan, periods)
print("tess bare loop gc on:  median %.3f min %.3f ms" % walls(be, plan, periods))
gc.disable()
print("tess bare loop gc off: median %.3f min %.3f ms" % walls(be, plan, periods))
gc.enable()
for case in ("k2", "tess"):
    cold, med, mn, _ = time_backend("pruned", *plans[case], 21)
    print(f"time_backend {case}: median {1e3 * med:.3f} min {1e3 * mn:.3f} ms")
be2 = backends.get_backend("pruned")
for _ in range(3):
    be2.search(plan, periods)
print("tess bare loop after k2, new instance: median %.3f min %.3f ms" % walls(be2, plan, periods))
print("tess bare loop, first instance again: median %.3f min %.3f ms" % walls(be, plan, periods))
