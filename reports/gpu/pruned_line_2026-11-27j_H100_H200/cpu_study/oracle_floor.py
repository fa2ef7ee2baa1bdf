"""How many shifts survive each stage of the cpu backend's cascade when the
floor is the period's exact optimum instead of the seed (K2-like, 600 of its
9,679 periods). Run make_oracle.py first; then, from the repository root,
PYTHONPATH=$PWD python reports/gpu/pruned_line_2026-11-27j_H100_H200/cpu_study/oracle_floor.py"""
import sys, numpy as np
sys.path.insert(0, __import__("os").path.dirname(__file__))
import cpu_oracle as C
from benchmarks.host_path import k2_like, plans_of
from backends.protocol import trial_periods
t, y, dy = k2_like(1)[0]
(plan, periods), = plans_of([(t, y, dy)], {})
periods = trial_periods(periods)
rng = np.random.default_rng(0)
sel = np.sort(rng.choice(periods.size, 600, replace=False))
P = periods[sel]
lo, hi = plan.width_windows(P)
b = C.CPUBackend(); st = b.upload(plan)
def run(forced):
    b.forced = forced
    import backends.pruning as pr
    out = C.search_periods(plan.lc.t, plan.lc.y, plan.lc.w, P, lo, hi, *[None]*0,
        plan.templates.widths, plan.templates.strides, plan.templates.offsets, plan.templates.a,
        plan.templates.overshoot, plan.templates.maxwidth, plan.templates.depth_min, plan.templates.signal_depth,
        plan.lc.uniform_weight, *(getattr(plan.templates.pieces, k) for k in ("n_pieces","bounds","inv_n","c2","rho","rho2","mean","sum_a2","amax")),
        tuple(getattr(plan.templates.pieces, k) for k in ("line_pieces","line_bounds","line_c","line_slope","line_centre","line_rho","line_defects")),
        pr.tuning(plan.templates.maxwidth + plan.lc.size), False, 2, st.walk, C.max_listed(plan, lo, hi), forced)
    return out
g, i, d, c = run(np.zeros(P.size))
print("seed :", dict(depth=c[1], coarse=c[2], fine=c[3], macs=c[5]))
g2, i2, d2, c2 = run(g.copy())
print("exact:", dict(depth=c2[1], coarse=c2[2], fine=c2[3], macs=c2[5]))
print("same gains:", np.array_equal(g, g2), np.array_equal(i, i2))
dif = np.abs(g - g2) / np.maximum(np.abs(g), 1e-300)
k = np.argmax(dif); print("max rel diff", dif.max(), "at", k, g[k], g2[k], (dif > 0).sum())
