"""Survivors of alternative bounds on AR (K2-like, sampled periods): how many
of the depth filter's shifts each bound lets through at the seed threshold
(no rounding pads: counts only). K1: one constant piece (the coarse stage);
K1line: one piece with the window's line removed; K2-K8: K constant pieces
(K8: pruned_period's fine stage before step 74); L3, L6: linear pieces (L6:
cpu's and the global layout's fine stage); exact>=floor: shifts whose exact
gain reaches the seed. From the repository root:

    PYTHONPATH=$PWD python reports/gpu/pruned_line_2026-11-27j_H100_H200/cpu_study/bound_study.py 40
"""
import sys, numpy as np
from benchmarks.host_path import k2_like, plans_of
from backends.protocol import trial_periods
from backends.implementations.cpu import fold_sort_period, shift_end
from backends import pruning

t, y, dy = k2_like(1)[0]
(plan, periods), = plans_of([(t, y, dy)], {})
periods = trial_periods(periods)
tp = plan.templates
n = plan.lc.size
w0 = plan.lc.uniform_weight
rng = np.random.default_rng(1)
sel = np.sort(rng.choice(periods.size, int(sys.argv[1]) if len(sys.argv) > 1 else 120, replace=False))
lo, hi = plan.width_windows(periods[sel])
KS = (2, 3, 4, 8)
seg_cache = {}
def segs(wi, a, K, linear=False):
    key = (wi, K, linear)
    if key not in seg_cache:
        seg_cache[key] = pruning.segment(a, K, linear)
    return seg_cache[key]

def const_bound(a, b, P, Q, idx):
    mean = 0.0; var = 0.0; res = 0.0
    for p in range(len(b) - 1):
        n_p = b[p+1] - b[p]
        c = a[b[p]:b[p+1]].mean()
        res += ((a[b[p]:b[p+1]] - c) ** 2).sum()
        S = P[idx + b[p+1]] - P[idx + b[p]]
        q = Q[idx + b[p+1]] - Q[idx + b[p]]
        mean = mean + c * S
        var = var + (q - S * S / n_p)
    return mean + np.sqrt(res) * np.sqrt(np.maximum(var, 0))

def line_bound(a, b, P, Q, J, idx):
    # K-piece linear: sum_p c_p S_p + s_p M_p + rho_L sqrt(Q - S^2/L - M^2/T) (window line)
    L = a.size; j = np.arange(L)
    mean = 0.0; resid = np.empty(L)
    for p in range(len(b) - 1):
        jj = j[b[p]:b[p+1]]; aa = a[b[p]:b[p+1]]
        m_p = jj.mean(); c = aa.mean()
        tt = ((jj - m_p) ** 2).sum()
        s = ((jj - m_p) * (aa - c)).sum() / tt if tt > 0 else 0.0
        resid[b[p]:b[p+1]] = aa - c - s * (jj - m_p)
        S = P[idx + b[p+1]] - P[idx + b[p]]
        M = (J[idx + b[p+1]] - J[idx + b[p]]) - (idx + m_p) * S
        mean = mean + c * S + s * M
    S = P[idx + L] - P[idx]; q = Q[idx + L] - Q[idx]
    M = (J[idx + L] - J[idx]) - (idx + (L - 1) / 2) * S
    T = L * (L * L - 1) / 12
    var = q - S * S / L - M * M / T
    return mean + np.sqrt((resid ** 2).sum()) * np.sqrt(np.maximum(var, 0))

names = ["depth", "K1", "K1line"] + [f"K{k}" for k in KS] + ["L6", "L3", "exact>=floor"]
tot = dict.fromkeys(names, 0)
bywidth = {}
for pi, period in enumerate(periods[sel]):
    f, w = fold_sort_period(plan.lc.t, plan.lc.y, plan.lc.w, period, tp.maxwidth)
    m = f.size
    u = (1 - f) * w
    cs = np.concatenate([[0], np.cumsum(f)])
    P = np.concatenate([[0], np.cumsum(u)]); Q = np.concatenate([[0], np.cumsum(u * u)])
    J = np.concatenate([[0], np.cumsum(np.arange(m) * u)])
    rows = []
    for wi in range(lo[pi], hi[pi]):
        a = tp.a[tp.offsets[wi]:tp.offsets[wi + 1]]
        d, stride = tp.widths[wi], tp.strides[wi]
        end = shift_end(m, n, d, stride)
        idx = np.arange(0, end, stride)
        idx = idx[idx + a.size <= m]
        box = 1 - (cs[idx + d] - cs[idx]) / d
        ok = box > tp.depth_min
        idx, box = idx[ok], box[ok]
        k = box * tp.overshoot[wi] / tp.signal_depth
        ar = np.array([a @ u[i:i + a.size] for i in idx]) if idx.size else np.zeros(0)
        a2 = w0 * (a * a).sum()
        gain = 2 * k * ar - k * k * a2
        rows.append((wi, a, idx, k, a2, gain, box))
    # seed: exact gain at each width's deepest box
    T = max([g[np.argmax(bx)] for (_, _, _, _, _, g, bx) in rows if g.size] + [0.0])
    for wi, a, idx, k, a2, gain, box in rows:
        if not idx.size: continue
        c1 = a.mean(); L = a.size
        ub = {}
        ub["K1"] = const_bound(a, np.array([0, L]), P, Q, idx)
        ub["K1line"] = line_bound(a, np.array([0, L]), P, Q, J, idx)
        for K in KS:
            ub[f"K{K}"] = const_bound(a, segs(wi, a, K), P, Q, idx)
        ub["L6"] = line_bound(a, segs(wi, a, 6, True), P, Q, J, idx)
        ub["L3"] = line_bound(a, segs(wi, a, 3, True), P, Q, J, idx)
        tot["depth"] += idx.size
        bw = bywidth.setdefault(L, dict.fromkeys(names, 0))
        bw["depth"] += idx.size
        for name, b in ub.items():
            g_ub = 2 * k * b - k * k * a2
            s = int(np.sum(g_ub >= T))
            assert np.all(g_ub >= gain - 1e-9 * abs(gain) - 1e-9), name
            tot[name] += s; bw[name] += s
        e = int(np.sum(gain >= T)); tot["exact>=floor"] += e; bw["exact>=floor"] += e
print({k: v for k, v in tot.items()})
print({k: round(v / tot["depth"], 4) for k, v in tot.items()})
print("by template length (depth, K1, K1line, K2, K3, K4, K8, L6, L3)")
for L in sorted(bywidth):
    b = bywidth[L]
    print(L, [b[x] for x in names[:-1]])
