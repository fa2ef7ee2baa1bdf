"""A lead for K2-like with errors that differ (``k2w``), on the CPU: how many
of the depth filter's shifts would the one-piece bound still keep if its A2
floor were the constant w_min sum(a^2) (no pw, pw2 loads, no square root)?
Those alone would then need today's data-dependent floor
c12 S_w - rho2 sqrt(V_w) (``a2_floor``), tested as max(constant, data): the
decisions of max(constant, data) are the same in either order, since the
bound falls as the floor rises. Sampled periods of gpu_timing's case, the
seed threshold T as ``cpu``'s (each width's deepest box), no rounding pads
(counts only). From the repository root:

    PYTHONPATH=$PWD:$PWD/scripts:reports/gpu/pruned_rings_2026-11-27k_H100 \\
        python reports/gpu/pruned_k2w_2026-11-28_H100/a2_floor_study.py 20 [k2w]
"""
import sys

import numpy as np
from gpu_timing import case_plan
from study_shifts import template_and_shifts

from backends.implementations.cpu import fold_sort_period
from backends.protocol import trial_periods

plan, periods = case_plan(sys.argv[2] if len(sys.argv) > 2 else "k2w")
periods = trial_periods(periods)
tp, n = plan.templates, plan.lc.size
w_min = float(np.min(plan.lc.w))
sel = np.sort(np.random.default_rng(1).choice(periods.size, int(sys.argv[1]), replace=False))
lo, hi = plan.width_windows(periods[sel])
tot = dict(depth=0, data=0, constant=0, both=0)
for pi, period in enumerate(periods[sel]):
    f, w = fold_sort_period(plan.lc.t, plan.lc.y, plan.lc.w, period, tp.maxwidth)
    m = f.size
    u = (1 - f) * w
    cs, P, Q, W, W2 = (np.r_[0, np.cumsum(x)] for x in (f, u, u * u, w, w * w))
    rows = []
    for wi in range(lo[pi], hi[pi]):
        a, d, idx = template_and_shifts(tp, wi, m, n)
        box = 1 - (cs[idx + d] - cs[idx]) / d
        keep = box > tp.depth_min
        idx, box = idx[keep], box[keep]
        rows.append((wi, a, idx, box * tp.overshoot[wi] / tp.signal_depth, box))
    seeds = []
    for wi, a, idx, k, box in rows:
        if idx.size:
            q = int(np.argmax(box))
            i = idx[q]
            seeds.append(2 * k[q] * (a @ u[i:i + a.size]) - k[q] ** 2 * ((a * a) @ w[i:i + a.size]))
    T = max(seeds + [0.0])
    for wi, a, idx, k, box in rows:
        if not idx.size:
            continue
        L = a.size
        a2 = a * a
        c1, r1 = a.mean(), np.sqrt(((a - a.mean()) ** 2).sum())
        c12, r12 = a2.mean(), np.sqrt(((a2 - a2.mean()) ** 2).sum())
        su, sw = P[idx + L] - P[idx], W[idx + L] - W[idx]
        vu = np.maximum(Q[idx + L] - Q[idx] - su * su / L, 0)
        vw = np.maximum(W2[idx + L] - W2[idx] - sw * sw / L, 0)
        ub_ar = c1 * su + r1 * np.sqrt(vu)
        data = np.maximum(c12 * sw - r12 * np.sqrt(vw), 0)
        constant = w_min * a2.sum()
        tot["depth"] += idx.size
        for name, lb in (("data", data), ("constant", constant), ("both", np.maximum(data, constant))):
            tot[name] += int(np.sum(2 * k * ub_ar - k * k * lb >= T))
print("w_min / mean w:", round(w_min / float(np.mean(plan.lc.w)), 4))
print(tot)
print({key: round(v / tot["depth"], 5) for key, v in tot.items()})
