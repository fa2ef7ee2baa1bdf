"""The row gate of ``measured_switches.patch`` (ROW_GATE) in numpy, on sampled
K2-like periods: how many rows of 32 shifts it skips, and a check that it
never skips a row holding a one-piece survivor (seed threshold, no pads).

    cd scripts && PYTHONPATH=..:. python ../reports/gpu/pruned_gate_2026-11-29e_H200/row_gate_check.py
"""

import numpy as np

from backends import pruning
from backends.implementations.cpu import fold_sort_period
from block_bound_study import fold_sums, seed_threshold, width_arrays
from gpu_timing import case_plan

SPAN = 32  # GATE_SPAN: samples per run of the tables


def main(n_periods=20):
    plan, periods = case_plan("k2")
    tp, pc, lc = plan.templates, plan.templates.pieces, plan.lc
    w0 = lc.uniform_weight
    lo, hi = plan.width_windows(periods)
    tally = dict(rows=0, rows_with_deep_shift=0, skipped=0, skipped_with_deep_shift=0, rows_with_survivor=0)
    for p in np.random.default_rng(0).choice(periods.size, n_periods, replace=False):
        fy = fold_sort_period(lc.t, lc.y, lc.w, periods[p], tp.maxwidth)[0]
        sums = fold_sums(plan, fy)
        u, cs, pu, pu2 = sums
        widths = [(wi, *width_arrays(plan, sums, wi)) for wi in range(lo[p], hi[p])]
        floor = seed_threshold(plan, u, widths) * (1 - 1e-9)
        m = u.size
        run_lo = np.array([pu[r * SPAN:min(m, r * SPAN + SPAN - 1) + 1].min() for r in range(m // SPAN + 1)])
        run_hi = np.array([pu[r * SPAN:min(m, r * SPAN + SPAN - 1) + 1].max() for r in range(m // SPAN + 1)])
        for wi, shifts, box, k, listed, s, v in widths:
            d, length = int(tp.widths[wi]), int(tp.offsets[wi + 1] - tp.offsets[wi])
            kscale, c1, q1 = tp.overshoot[wi] / tp.signal_depth, pc.mean[wi, 0], (2 * pc.rho[wi, 0]) ** 2
            a2 = w0 * pc.sum_a2[wi]
            k_deep = kscale * (1 - pruning.depth_limits([d], tp.depth_min)[0] / d)
            deep = cs[shifts + d] - cs[shifts] <= pruning.depth_limits([d], tp.depth_min)[0]
            survivor = listed & (2 * k * (c1 * s + pc.rho[wi, 0] * np.sqrt(v)) - k * k * a2 >= floor)
            for r0 in range(0, shifts.size, 32):
                row = slice(r0, min(r0 + 32, shifts.size))
                a, z = shifts[row][0], shifts[row][-1]
                u_hi = run_hi[(a + d) // SPAN:(z + d) // SPAN + 1].max() - run_lo[a // SPAN:z // SPAN + 1].min()
                u_lo = run_lo[(a + d) // SPAN:(z + d) // SPAN + 1].min() - run_hi[a // SPAN:z // SPAN + 1].max()
                k_hi, k_lo = kscale * u_hi / (w0 * d), max(kscale * u_lo / (w0 * d), k_deep)
                e = min(-(-(z + length) // SPAN) * SPAN, m)  # the union widened to whole runs
                su = pu[e] - pu[a]
                var = max(pu2[e] - pu2[a] - su * su / (e - a), 0.0)
                x = 2 * (c1 * (u_hi if c1 >= 0 else u_lo)) + np.sqrt(q1 * var)
                kk = min(max(x / (2 * a2), k_lo), k_hi)
                skip = k_hi < k_deep or (k_lo > 1e-6 * kscale and kk * x - kk * kk * a2 < floor)
                tally["rows"] += 1
                tally["rows_with_deep_shift"] += bool(deep[row].any())
                tally["rows_with_survivor"] += bool(survivor[row].any())
                if skip:
                    assert not survivor[row].any(), (p, wi, r0)
                    tally["skipped"] += 1
                    tally["skipped_with_deep_shift"] += bool(deep[row].any())
    print(tally)


if __name__ == "__main__":
    main()
