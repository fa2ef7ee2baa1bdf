"""How much a finer run table would tighten pruned_period's row gate (CPU
emulation, K2-like, 40 sampled periods, rows of 32 shifts, no pads): the share
of listed (depth-passing) shifts in rows whose one-piece bound reaches the
seed threshold, with the window sums' range taken from runs of R samples at
the rows' starts and ends (as row_gate does for R = 32), and the rows' union
of windows widened to whole runs (as row_gate does) or exact; then with the
row's least window flux sum among its depth-passing shifts instead of run
tables (the seeds' scan visits every shift's flux sum already: with uniform
weights the u sums and k are largest where it is least), exact union.

    PYTHONPATH=.:scripts python reports/gpu/pruned_counts_2026-12-01b_H200/gate_runs_study.py
"""

import numpy as np

from block_bound_study import best_k_bound, runs_bounds, sampled_folds, union_root
from gpu_timing import case_plan

ROW, SPANS = 32, (32, 16, 8)


def main(n_periods=40):
    plan, periods = case_plan("k2")
    tp, pc, lc = plan.templates, plan.templates.pieces, plan.lc
    widened, exact_union, listed_all, least_flux = dict.fromkeys(SPANS, 0), dict.fromkeys(SPANS, 0), 0, 0
    for (_, prefix, prefix2), widths, threshold in sampled_folds(plan, periods, n_periods):
        m = prefix.size - 1
        for wi, shifts, _, k, listed, s, _ in widths:
            d, c1, r1 = int(tp.widths[wi]), pc.mean[wi, 0], pc.rho[wi, 0]
            a2, k_min = lc.uniform_weight * pc.sum_a2[wi], tp.depth_min * tp.overshoot[wi] / tp.signal_depth
            listed_all += int(listed.sum())
            for start in range(0, shifts.size, ROW):
                inside = listed[start:start + ROW]
                if not inside.any():
                    continue
                first, last = shifts[start:start + ROW][[0, -1]]
                root_v = union_root(prefix, prefix2, first, last + d)
                at = np.flatnonzero(inside)[np.argmax(s[start:start + ROW][inside])]  # the least flux sum's
                if best_k_bound(c1 * s[start + at] + r1 * root_v, a2, k_min, k[start + at]) >= threshold:
                    least_flux += int(inside.sum())
                for span in SPANS:
                    s_hi, a0, e1 = runs_bounds(prefix, m, first, last, d, span)
                    k_hi = max(k_min, s_hi / (lc.uniform_weight * d) * tp.overshoot[wi] / tp.signal_depth)
                    for tally, (lo, hi) in ((widened, (a0, e1)), (exact_union, (first, last + d))):
                        if best_k_bound(c1 * s_hi + r1 * union_root(prefix, prefix2, lo, hi), a2, k_min,
                                        k_hi) >= threshold:
                            tally[span] += int(inside.sum())
    for span in SPANS:
        print(f"runs of {span}: kept {widened[span] / listed_all:.3f} (union widened to runs), "
              f"{exact_union[span] / listed_all:.3f} (exact union)")
    print(f"the row's least deep flux sum, exact union: kept {least_flux / listed_all:.3f}")


if __name__ == "__main__":
    main()
