"""How much of the per-shift coarse stage a block-level bound could skip (CPU
study for issue 12; uniform weights; not a backend).

For each sampled period of the K2-like and TESS-like timing cases
(``gpu_timing.case_plan``) and each allowed width, the seed threshold T
(the exact gain at each width's deepest box, as ``cpu``/``pruned`` seed) and
the one-piece bound per shift (``coarse_bounds``, without rounding pads) give
the per-shift survivors. A block of B consecutive shifts is bounded at once:
every window lies inside the block's union U, so its centred sum of squares
is at most U's; the window sums S are at most ``S_hi`` and k = box * kscale
lies in [k_lo, k_hi], so G = 2 k (c1 S + r1 sqrt(V)) - k^2 A2 is at most
max over k in [k_lo, k_hi] of 2 k X - k^2 A2 with X = c1 S_hi + r1 sqrt(V_U).
``exact``: S_hi and the k range over the block's listed shifts (what a
per-shift pass would know); ``aligned``: S_hi from the maxima and minima of
the prefix sums over aligned blocks of B samples (no per-shift work), k_hi
from box = S / (W d). Prints, per case and B, the blocks whose bound reaches
T and the listed shifts inside them (what per-shift work would remain), the
listed shifts in blocks that hold a per-shift survivor (``ideal``: what the
tightest block bound would leave), and
the share of all shifts in blocks whose aligned bound reaches T (what a gate
that never visits a skipped block's shifts would leave; NOTES.md step 85).

    PYTHONPATH=.:scripts python scripts/block_bound_study.py --blocks 8 32 --periods 60
"""

from __future__ import annotations

import argparse

import numpy as np

from backends.implementations.cpu import fold_sort_period, shift_end
from gpu_timing import case_plan  # scripts/ is on sys.path when run as a script


def fold_sums(plan, fy):
    """(u, prefix sums of the flux, of u, of u^2) of one patched fold, ``u = (1 - F) W``."""
    u = (1.0 - fy) * plan.lc.uniform_weight
    return (u, *(np.concatenate([[0.0], np.cumsum(x)]) for x in (fy, u, u * u)))


def width_arrays(plan, sums, wi):
    """(shifts, box depths, k, listed mask, window sums S, centred V) of width ``wi`` on a fold."""
    tp, n = plan.templates, plan.lc.size
    u, c, p, p2 = sums
    d, stride = int(tp.widths[wi]), int(tp.strides[wi])
    shifts = np.arange((shift_end(u.size, n, d, stride) - 1) // stride + 1) * stride
    box = 1.0 - (c[shifts + d] - c[shifts]) / d
    s = p[shifts + d] - p[shifts]
    v = np.maximum(p2[shifts + d] - p2[shifts] - s * s / d, 0.0)
    return shifts, box, box * tp.overshoot[wi] / tp.signal_depth, box > tp.depth_min, s, v


def seed_threshold(plan, u, widths) -> float:
    """The seed threshold T of a fold (``u``; ``widths``: (wi, *width_arrays)
    of each allowed width): the largest exact gain at a width's deepest box."""
    tp, pc = plan.templates, plan.templates.pieces
    threshold = 0.0
    for wi, shifts, box, k, listed, *_ in widths:
        if listed.any():
            q = int(np.argmax(np.where(listed, box, -np.inf)))
            a = tp.a[tp.offsets[wi]:tp.offsets[wi + 1]]
            ar, a2 = a @ u[shifts[q]:shifts[q] + a.size], plan.lc.uniform_weight * pc.sum_a2[wi]
            threshold = max(threshold, 2 * k[q] * ar - k[q] ** 2 * a2)
    return threshold


def uniform_case(case):
    """(plan, periods) of timing case ``case``; SystemExit unless its weights
    are uniform, as the studies' bounds assume."""
    plan, periods = case_plan(case)
    if not plan.lc.uniform_weight > 0:
        raise SystemExit(f"{case}: uniform weights only")
    return plan, periods


def sampled_folds(plan, periods, n_periods, seed=0):
    """Per sampled period (``n_periods`` of ``periods``, seeded): the fold's
    (u, prefix sums of u, of u^2), its widths (``width_arrays`` of each allowed
    one, with its index) and its seed threshold."""
    tp, lc = plan.templates, plan.lc
    lo, hi = plan.width_windows(periods)
    for p in np.random.default_rng(seed).choice(periods.size, min(n_periods, periods.size), replace=False):
        u, _, prefix, prefix2 = sums = fold_sums(plan, fold_sort_period(lc.t, lc.y, lc.w, periods[p], tp.maxwidth)[0])
        widths = [(wi, *width_arrays(plan, sums, wi)) for wi in range(lo[p], hi[p])]
        yield (u, prefix, prefix2), widths, seed_threshold(plan, u, widths)


def best_k_bound(x, a2, k_lo, k_hi):
    k = min(max(x / a2, k_lo), k_hi)
    return 2.0 * k * x - k * k * a2


def union_root(prefix, prefix2, lo, hi):
    """The root of u's centred squares over samples lo .. hi - 1 (windows' union)."""
    su, qu = prefix[hi] - prefix[lo], prefix2[hi] - prefix2[lo]
    return np.sqrt(max(qu - su * su / (hi - lo), 0.0))


def runs_bounds(prefix, m, first, last, d, span):
    """(S_hi, a0, e1) of the row of windows of d samples starting at first ..
    last, from runs of ``span`` samples as pruned.cu's row_gate takes them:
    the largest window sum of u the runs of its starts and ends allow, and
    its union widened to whole runs, samples a0 .. e1 - 1."""
    a0, a1 = first // span * span, min((last // span + 1) * span, m)  # the starts' runs
    e0, e1 = (first + d) // span * span, min(((last + d) // span + 1) * span, m)  # the ends'
    return prefix[e0:e1 + 1].max() - prefix[a0:a1 + 1].min(), a0, e1


def study(case, blocks, n_periods, seed=0) -> dict:
    """{B: tally} for every block size of ``blocks``, over the same sampled periods."""
    plan, periods = uniform_case(case)
    tp, pc, lc = plan.templates, plan.templates.pieces, plan.lc
    tallies = {block: dict(listed=0, coarse=0, blocks=0, exact_blocks=0, exact_shifts=0, aligned_blocks=0,
                           aligned_shifts=0, ideal_shifts=0, shifts=0, aligned_all=0) for block in blocks}
    for (u, prefix, prefix2), widths, threshold in sampled_folds(plan, periods, n_periods, seed):
        for wi, shifts, box, k, listed, s, v in widths:
            d, c1, r1 = int(tp.widths[wi]), pc.mean[wi, 0], pc.rho[wi, 0]
            a2, kmin = lc.uniform_weight * pc.sum_a2[wi], tp.depth_min * tp.overshoot[wi] / tp.signal_depth
            survives = listed & (2 * k * (c1 * s + r1 * np.sqrt(v)) - k * k * a2 >= threshold)
            coarse = int(survives.sum())
            for block, tally in tallies.items():
                tally["listed"] += int(listed.sum())
                tally["coarse"] += coarse
                for start in range(0, shifts.size, block):
                    q = slice(start, min(start + block, shifts.size))
                    inside = listed[q]
                    tally["blocks"] += 1
                    tally["shifts"] += inside.size
                    first, last = shifts[q][0], shifts[q][-1]
                    root_v = union_root(prefix, prefix2, first, last + d)
                    lo_at, hi_at = first // block * block, last // block * block + block
                    s_hi = (prefix[first + d:min(hi_at + d, prefix.size)].max()
                            - prefix[lo_at:min(hi_at, prefix.size)].min())
                    k_hi = max(kmin, s_hi / (lc.uniform_weight * d) * tp.overshoot[wi] / tp.signal_depth)
                    aligned = best_k_bound(c1 * s_hi + r1 * root_v, a2, kmin, k_hi)
                    if aligned >= threshold:  # a gate that does not visit the shifts keeps all of them
                        tally["aligned_all"] += inside.size
                    if not inside.any():
                        continue
                    if survives[q].any():
                        tally["ideal_shifts"] += int(inside.sum())
                    exact = best_k_bound(c1 * s[q][inside].max() + r1 * root_v, a2, k[q][inside].min(),
                                         k[q][inside].max())
                    for name, bound in (("exact", exact), ("aligned", aligned)):
                        if bound >= threshold:
                            tally[f"{name}_blocks"] += 1
                            tally[f"{name}_shifts"] += int(inside.sum())
    return tallies


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, nargs="+", default=[8, 32])
    parser.add_argument("--periods", type=int, default=60, help="sampled periods per case")
    parser.add_argument("--cases", nargs="+", default=["k2", "tess"])
    args = parser.parse_args(argv)
    print("| case | B | listed shifts | per-shift one-piece survivors | blocks reaching T (exact / aligned) "
          "| listed shifts in them (exact / aligned) | listed shifts in blocks with a survivor (ideal) "
          "| all shifts in aligned blocks reaching T |\n|---|---:|---:|---:|---:|---:|---:|---:|")
    for case in args.cases:
        for block, t in study(case, args.blocks, args.periods).items():
            print(f"| {case} | {block} | {t['listed']:,} | {t['coarse'] / t['listed']:.3f} | "
                  f"{t['exact_blocks'] / t['blocks']:.3f} / {t['aligned_blocks'] / t['blocks']:.3f} | "
                  f"{t['exact_shifts'] / t['listed']:.3f} / {t['aligned_shifts'] / t['listed']:.3f} | "
                  f"{t['ideal_shifts'] / t['listed']:.3f} | "
                  f"{t['aligned_all'] / t['shifts']:.3f} |", flush=True)


if __name__ == "__main__":
    main()
