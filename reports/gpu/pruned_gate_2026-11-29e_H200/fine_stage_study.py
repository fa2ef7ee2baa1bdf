"""How selective cheaper K-piece bounds are on the one-piece bound's
survivors (CPU study, K2-like timing case, uniform weights, no rounding
pads): what an intermediate stage before `pruned_period`'s 6-piece linear
bound could remove from its fine rounds.

For sampled periods, each allowed width, every shift that passes the depth
filter and the one-piece bound at the seed threshold T (as the block study
and `cpu` seed it): the share that passes the K-piece constant bound
(AR <= sum_p c_p S_p + rho_K sqrt(sum_p V_p)) for K = 2, 3, 4, the K-piece
linear bound (AR <= sum_p (c_p S_p + slope_p M_p) + rho_L sqrt(R)) for K = 2, 3,
4 and 6 (`pruned_period`'s), R the window's squares left after one
least-squares line (as the kernels take it) or after each piece's (tighter),
and the exact gain.

    cd scripts && PYTHONPATH=..:. python ../reports/gpu/pruned_gate_2026-11-29e_H200/fine_stage_study.py
"""

import numpy as np

from backends import pruning
from block_bound_study import sampled_folds
from gpu_timing import case_plan

CONSTANT_PIECES = (2, 3, 4)
LINEAR_PIECES = (2, 3, 4, pruning.LINE_PIECES)


def piece_sums(prefix, starts, bounds):
    """Per shift (rows) and piece (columns): the sum of ``prefix``'s array over the piece."""
    ends = starts[:, None] + bounds[None, :]
    return np.diff(prefix[ends], axis=1)


def constant_bound(pu, pu2, starts, a, bounds):
    """Upper bound of AR at each start from constant pieces of ``a``."""
    c, rho = pruning._piece_terms(a, bounds)
    s, q = piece_sums(pu, starts, bounds), piece_sums(pu2, starts, bounds)
    v = np.maximum(q - s * s / np.diff(bounds)[None, :], 0.0).sum(axis=1)
    return s @ c + rho * np.sqrt(v)


def moments(pu, pu2, pju, starts, bounds):
    """Per shift and piece: (sum of u, of u^2, of (j - jbar) u), j the template
    index, jbar the piece's centre; and the pieces' n and sum of (j - jbar)^2."""
    s, q = piece_sums(pu, starts, bounds), piece_sums(pu2, starts, bounds)
    sj = piece_sums(pju, starts, bounds) - starts[:, None] * s  # sum of (template index) u over each piece
    n = np.diff(bounds).astype(float)
    m = sj - ((bounds[:-1] + bounds[1:] - 1) / 2.0)[None, :] * s
    return s, q, m, n, n * (n * n - 1) / 12.0


def linear_bound(pu, pu2, pju, starts, a, bounds, per_piece):
    """Upper bound of AR at each start from the least-squares lines of ``a``'s
    pieces (c and slope at the piece's centre). The residual's norm times the
    root of u's squares left after a least-squares line: per piece
    (``per_piece``), or over the whole window, as `pruned`'s and `cpu`'s
    ``line_terms`` / ``detrended_squares`` take it (one line, cheaper, looser)."""
    c, slope, _, rho, _ = pruning._line_terms(a, bounds)
    s, q, m, n, t = moments(pu, pu2, pju, starts, bounds)
    if per_piece:
        var = (q - s * s / n[None, :] - np.where(t > 0, m * m / np.where(t > 0, t, 1.0), 0.0)).clip(0).sum(axis=1)
    else:
        ws, wq, wm, wn, wt = moments(pu, pu2, pju, starts, bounds[[0, -1]])
        var = (wq - ws * ws / wn - wm * wm / wt)[:, 0]
    return s @ c + m @ slope + rho * np.sqrt(np.maximum(var, 0.0))


def main(n_periods=20):
    plan, periods = case_plan("k2")
    tp, pc, lc = plan.templates, plan.templates.pieces, plan.lc
    w0 = lc.uniform_weight
    tally = {"deep": 0, "one_piece": 0, **{f"constant {k}": 0 for k in CONSTANT_PIECES},
             **{f"linear {k}{how}": 0 for k in LINEAR_PIECES for how in ("", ", per-piece residual")},
             "exact >= T": 0}
    for (u, pu, pu2), widths, threshold in sampled_folds(plan, periods, n_periods, seed=5):
        pju = np.concatenate([[0.0], np.cumsum(np.arange(u.size) * u)])
        for wi, shifts, box, k, listed, s, v in widths:
            a = tp.a[tp.offsets[wi]:tp.offsets[wi + 1]]
            a2 = w0 * pc.sum_a2[wi]
            one = listed & (2 * k * (pc.mean[wi, 0] * s + pc.rho[wi, 0] * np.sqrt(v)) - k * k * a2 >= threshold)
            tally["deep"] += int(listed.sum())
            tally["one_piece"] += int(one.sum())
            if not one.any():
                continue
            starts, kk = shifts[one], k[one]
            passes = lambda ar: int((2 * kk * ar - kk * kk * a2 >= threshold).sum())  # noqa: E731
            for pieces in CONSTANT_PIECES:
                tally[f"constant {pieces}"] += passes(constant_bound(pu, pu2, starts, a, pruning.segment(a, pieces)))
            for pieces in LINEAR_PIECES:
                bounds = pruning.segment(a, pieces, linear=True)
                tally[f"linear {pieces}"] += passes(linear_bound(pu, pu2, pju, starts, a, bounds, False))
                tally[f"linear {pieces}, per-piece residual"] += passes(linear_bound(pu, pu2, pju, starts, a,
                                                                                    bounds, True))
            exact = np.array([a @ u[i:i + a.size] for i in starts])
            tally["exact >= T"] += passes(exact)
    print(f"K2-like, {n_periods} sampled periods, seed threshold T, no pads")
    print("| stage | shifts | of the one-piece survivors |\n|---|---:|---:|")
    for name, count in tally.items():
        share = f"{count / tally['one_piece']:.3f}" if name not in ("deep",) else ""
        print(f"| {name} | {count:,} | {share} |")


if __name__ == "__main__":
    main()
