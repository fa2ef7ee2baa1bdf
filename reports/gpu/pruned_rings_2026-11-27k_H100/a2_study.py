"""Why K2-like with errors that differ (gpu_timing's ``k2w``) keeps ~27x the
survivors of the K-piece bound: over sampled periods, the depth filter's
shifts whose gain bound reaches the seed threshold, with AR's 6-piece linear
bound (the global layout's) or its exact value, and A2 exact or its
8-piece constant lower bound mean_w - rho2 sqrt(V_w) (a2_floor); no rounding
pads (counts only). From the repository root:

    PYTHONPATH=$PWD:$PWD/scripts python reports/gpu/pruned_rings_2026-11-27k_H100/a2_study.py 20
"""
import sys
import numpy as np
from gpu_timing import case_plan
from study_shifts import template_and_shifts
from backends.protocol import trial_periods
from backends.implementations.cpu import fold_sort_period
from backends import pruning

plan, periods = case_plan(sys.argv[2] if len(sys.argv) > 2 else "k2w")
periods = trial_periods(periods)
tp, n = plan.templates, plan.lc.size
sel = np.sort(np.random.default_rng(1).choice(periods.size, int(sys.argv[1]), replace=False))
lo, hi = plan.width_windows(periods[sel])
tot = dict(depth=0, exact=0, L6_exactA2=0, exactAR_lbA2=0, L6_lbA2=0, L6_meanA2=0)


def windows(prefix, idx, b0, b1):
    return prefix[idx + b1] - prefix[idx + b0]


for pi, period in enumerate(periods[sel]):
    f, w = fold_sort_period(plan.lc.t, plan.lc.y, plan.lc.w, period, tp.maxwidth)
    m = f.size
    u = (1 - f) * w
    cs, P, Q = (np.r_[0, np.cumsum(x)] for x in (f, u, u * u))
    J = np.r_[0, np.cumsum(np.arange(m) * u)]
    W, W2 = np.r_[0, np.cumsum(w)], np.r_[0, np.cumsum(w * w)]
    rows = []
    for wi in range(lo[pi], hi[pi]):
        a, d, idx = template_and_shifts(tp, wi, m, n)
        L = a.size
        box = 1 - (cs[idx + d] - cs[idx]) / d
        idx, box = idx[box > tp.depth_min], box[box > tp.depth_min]
        k = box * tp.overshoot[wi] / tp.signal_depth
        ar = np.array([a @ u[i:i + L] for i in idx]) if idx.size else np.zeros(0)
        a2 = np.array([(a * a) @ w[i:i + L] for i in idx]) if idx.size else np.zeros(0)
        rows.append((a, idx, k, ar, a2, box))
    T = max([(2 * k * ar - k * k * a2)[np.argmax(bx)] for a, idx, k, ar, a2, bx in rows if idx.size] + [0.0])
    for a, idx, k, ar, a2, box in rows:
        if not idx.size:
            continue
        L = a.size
        # AR: 6-piece linear bound (as bound_study.line_bound)
        b = pruning.segment(a, 6, True)
        c, slope, centre, rho_l, _ = pruning._line_terms(a, b)
        mean = 0.0
        for p in range(c.size):
            S = windows(P, idx, b[p], b[p + 1])
            mean = mean + c[p] * S + slope[p] * (windows(J, idx, b[p], b[p + 1]) - (idx + centre[p]) * S)
        S, q = windows(P, idx, 0, L), windows(Q, idx, 0, L)
        M = windows(J, idx, 0, L) - (idx + (L - 1) / 2) * S
        var = q - S * S / L - M * M / (L * (L * L - 1) / 12)
        ub_ar = mean + rho_l * np.sqrt(np.maximum(var, 0))
        # A2: 8 constant pieces of a^2 over a's pieces, centred Cauchy-Schwarz
        b8 = pruning.segment(a, 8)
        a2s = a * a
        mw, vw, rho2 = 0.0, 0.0, 0.0
        for p in range(len(b8) - 1):
            c2 = a2s[b8[p]:b8[p + 1]].mean()
            rho2 += ((a2s[b8[p]:b8[p + 1]] - c2) ** 2).sum()
            Sw = windows(W, idx, b8[p], b8[p + 1])
            mw = mw + c2 * Sw
            vw = vw + windows(W2, idx, b8[p], b8[p + 1]) - Sw * Sw / (b8[p + 1] - b8[p])
        lb_a2 = np.maximum(mw - np.sqrt(rho2) * np.sqrt(np.maximum(vw, 0)), 0)
        mean_a2 = a2s.sum() * windows(W, idx, 0, L) / L  # A2 if w were flat over the window
        tot["depth"] += idx.size
        for name, arb, a2b in (("exact", ar, a2), ("L6_exactA2", ub_ar, a2), ("exactAR_lbA2", ar, lb_a2),
                               ("L6_lbA2", ub_ar, lb_a2), ("L6_meanA2", ub_ar, mean_a2)):
            tot[name] += int(np.sum(2 * k * arb - k * k * a2b >= T))
print(tot)
print({key: round(v / tot["depth"], 5) for key, v in tot.items()})
