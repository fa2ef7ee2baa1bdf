"""Could pruned_period's per-shift stages read float32 prefix sums? (A study
for a layout with two blocks per SM: float32 copies of the prefix sums take
half the shared memory.) K2-like case, sampled periods, uniform weights.

Each float32 array stores a float64 prefix sum, centred so that its values
stay small: D (deficits 1 - f, whose windows are d - s), P (u), Q (u^2 less
its mean per sample) and J ((k - m/2) u). A window of a stored array is off
by at most 4 * 2^-24 * max|X| (two stored roundings, each within 2^-24 |X|,
and the float32 subtraction's), a per-period margin. Counted over the depth filter's shifts:

- depth filter: shifts whose float32 deficit window lies within its margin
  of the filter's limit (these would need a float64 re-check);
- K1 and L6: shifts whose gain bound reaches the seed threshold with float64
  windows, and with float32 windows widened by their margins (the bound's
  largest value over every window within the margin; k within its margin too);
- K1_arith_u32: the one-piece bound evaluated in float32 arithmetic from
  those windows, at most how far below its float64 value, in units of 2^-24
  times the sum of its terms' magnitudes (what a float32 kernel's pad must
  cover; seen, not proven).

No float64 rounding pads (counts only). From the repository root:

    PYTHONPATH=$PWD:$PWD/scripts python reports/gpu/pruned_rings_2026-11-27k_H100/fp32_study.py 30
"""
import sys

import numpy as np

from backends import pruning
from backends.implementations.cpu import fold_sort_period
from backends.protocol import trial_periods
from gpu_timing import case_plan
from study_shifts import template_and_shifts

U32 = 2.0 ** -24
plan, periods = case_plan(sys.argv[2] if len(sys.argv) > 2 else "k2")
periods = trial_periods(periods)
tp, n = plan.templates, plan.lc.size
assert plan.lc.uniform_weight > 0
sel = np.sort(np.random.default_rng(1).choice(periods.size, int(sys.argv[1]), replace=False))
lo, hi = plan.width_windows(periods[sel])
tot = dict(depth=0, depth_ambiguous=0, K1=0, K1_fp32=0, L6=0, L6_fp32=0, exact=0)
worst = dict(K1_arith_u32=0.0)


def stored(x):
    """(float32 copy of float64 prefix x, margin of one window of it)."""
    return x.astype(np.float32), 4 * U32 * float(np.max(np.abs(x)))


def win(x, i, b0, b1):
    return x[i + b1] - x[i + b0]


def gain_max(k_lo, k_hi, ub, a2):
    """Largest 2k ub - k^2 a2 over k in [k_lo, k_hi] (concave in k)."""
    k = np.clip(ub / a2, k_lo, k_hi)
    return 2 * k * ub - k * k * a2


for pi, period in enumerate(periods[sel]):
    f, w = fold_sort_period(plan.lc.t, plan.lc.y, plan.lc.w, period, tp.maxwidth)
    m = f.size
    u = (1 - f) * w
    idx_all = np.arange(m + 1)
    cs = np.r_[0, np.cumsum(f)]
    D = np.r_[0, np.cumsum(1 - f)]
    P, Q, J = (np.r_[0, np.cumsum(x)] for x in (u, u * u, (np.arange(m) - m / 2) * u))
    q_mean = Q[-1] / m
    D32, eD = stored(D)
    P32, eP = stored(P)
    Qc32, eQ = stored(Q - q_mean * idx_all)
    J32, eJ = stored(J)
    Q32 = lambda i, b0, b1: win(Qc32, i, b0, b1).astype(np.float64) + q_mean * (b1 - b0)
    rows = []
    for wi in range(lo[pi], hi[pi]):
        a, d, idx = template_and_shifts(tp, wi, m, n)
        L = a.size
        s = cs[idx + d] - cs[idx]
        box = 1 - s / d
        passed = box > tp.depth_min
        # the float32 filter: deficit window within its margin of d * depth_min
        deficit32 = win(D32, idx, 0, d).astype(np.float64)
        tot["depth_ambiguous"] += int(np.sum(np.abs(deficit32 - d * tp.depth_min) <= eD))
        idx, box, deficit32 = idx[passed], box[passed], deficit32[passed]
        scale = tp.overshoot[wi] / tp.signal_depth
        k = box * scale
        k_lo, k_hi = (deficit32 - eD) / d * scale, (deficit32 + eD) / d * scale
        ar = np.array([a @ u[i:i + L] for i in idx]) if idx.size else np.zeros(0)
        a2 = plan.lc.uniform_weight * (a * a).sum()
        rows.append((a, idx, k, k_lo, k_hi, ar, a2, box))
    T = max([(2 * k * ar - k * k * a2)[np.argmax(bx)] for a, idx, k, _, _, ar, a2, bx in rows if idx.size] + [0.0])
    for a, idx, k, k_lo, k_hi, ar, a2, box in rows:
        if not idx.size:
            continue
        L = a.size
        tot["depth"] += idx.size
        tot["exact"] += int(np.sum(2 * k * ar - k * k * a2 >= T))
        # K1: c1 S + rho1 sqrt(Q - S^2 / L)
        c1, rho1 = a.mean(), np.sqrt(((a - a.mean()) ** 2).sum())
        S, q = win(P, idx, 0, L), win(Q, idx, 0, L)
        ub = c1 * S + rho1 * np.sqrt(np.maximum(q - S * S / L, 0))
        tot["K1"] += int(np.sum(2 * k * ub - k * k * a2 >= T))
        S32 = win(P32, idx, 0, L).astype(np.float64)
        q32 = Q32(idx, 0, L)
        var32 = q32 + eQ - np.maximum(np.abs(S32) - eP, 0) ** 2 / L  # the largest variance within the margins
        ub32 = c1 * S32 + abs(c1) * eP + rho1 * np.sqrt(np.maximum(var32, 0))
        tot["K1_fp32"] += int(np.sum(gain_max(k_lo, k_hi, ub32, a2) >= T))
        # the same bound in float32 arithmetic: how far below its float64 value (in units of U32 times
        # the sum of its terms' magnitudes), which a float32 kernel's rounding pad must cover
        f32 = np.float32
        S_f = win(P32, idx, 0, L)
        var_f = (win(Qc32, idx, 0, L) + f32(q_mean * L) + f32(eQ)
                 - np.maximum(np.abs(S_f) - f32(eP), f32(0)) ** 2 / f32(L))
        ub_f = f32(c1) * S_f + f32(abs(c1) * eP) + f32(rho1) * np.sqrt(np.maximum(var_f, f32(0)))
        terms = abs(c1) * (np.abs(S32) + eP) + rho1 * np.sqrt(np.abs(q32) + eQ + S32 * S32 / L)
        worst["K1_arith_u32"] = max(worst["K1_arith_u32"], float(np.max((ub32 - ub_f) / terms)) / U32)
        # L6: sum_p c_p S_p + slope_p M_p + rho_L sqrt(Q - S^2/L - M^2/T)
        b = pruning.segment(a, 6, True)
        c, slope, mid, rho_l, _ = pruning._line_terms(a, b)
        mean = np.zeros(idx.size)
        mean32 = np.zeros(idx.size)
        slack = np.zeros(idx.size)
        for p in range(c.size):
            centre = idx + mid[p] - m / 2
            Sp = win(P, idx, b[p], b[p + 1])
            mean += c[p] * Sp + slope[p] * (win(J, idx, b[p], b[p + 1]) - centre * Sp)
            Sp32 = win(P32, idx, b[p], b[p + 1]).astype(np.float64)
            mean32 += c[p] * Sp32 + slope[p] * (win(J32, idx, b[p], b[p + 1]).astype(np.float64) - centre * Sp32)
            slack += abs(c[p]) * eP + abs(slope[p]) * (eJ + np.abs(centre) * eP)
        centre = idx + (L - 1) / 2 - m / 2
        Mw = win(J, idx, 0, L) - centre * S
        Tl = L * (L * L - 1) / 12
        var = q - S * S / L - Mw * Mw / Tl
        tot["L6"] += int(np.sum(2 * k * (mean + rho_l * np.sqrt(np.maximum(var, 0))) - k * k * a2 >= T))
        M32 = win(J32, idx, 0, L).astype(np.float64) - centre * S32
        eM = eJ + np.abs(centre) * eP
        var32 = (q32 + eQ - np.maximum(np.abs(S32) - eP, 0) ** 2 / L
                 - np.maximum(np.abs(M32) - eM, 0) ** 2 / Tl)
        ub32 = mean32 + slack + rho_l * np.sqrt(np.maximum(var32, 0))
        tot["L6_fp32"] += int(np.sum(gain_max(k_lo, k_hi, ub32, a2) >= T))
print(tot)
print({key: round(v / tot["depth"], 5) for key, v in tot.items()})
print(worst)
