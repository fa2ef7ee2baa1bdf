"""How many coarse-stage passes pruned_period's gated takes spend on rows the
row gate kept, against the same rows packed densely (CPU emulation, K2-like,
40 sampled periods, the gate as row_gate computes it: run tables of 32, the
union widened to whole runs, no pads).

A take is 4 rows of 32 shifts (PERIOD_GRAB), starting at a multiple of 128
shifts within its width. Its gated loop runs ceil(K / 2) passes of
PERIOD_AT_ONCE = 2 rows for its K kept rows, so a take with an odd count
evaluates one empty row's slot. Packed: every pass carries 2 kept rows of
one width, ceil(rows / 2) per width. Without a gate: 2 passes per take.
gated_grab8: takes of 8 rows (PERIOD_GRAB 8), odd counts rarer. flux_gate:
the gate of this report's calls (each row's least deep flux sum, exact union:
gate_runs_study.py's), in takes of 4 rows, to relate passes to the cycles
those calls measured.

    PYTHONPATH=.:scripts python reports/gpu/pruned_counts_2026-12-01c_H200/take_packing_study.py
"""

import numpy as np

from block_bound_study import best_k_bound, sampled_folds
from gpu_timing import case_plan

ROW, GRAB, AT_ONCE, SPAN = 32, 4, 2, 32


def row_kept(prefix, prefix2, m, shifts, listed, d, c1, r1, a2, k_min, to_k, threshold, start):
    """Whether row_gate keeps the row of shifts[start:start + ROW]."""
    if not listed[start:start + ROW].any():
        return False
    first, last = shifts[start:start + ROW][[0, -1]]
    a0, a1 = first // SPAN * SPAN, min((last // SPAN + 1) * SPAN, m)
    e0, e1 = (first + d) // SPAN * SPAN, min(((last + d) // SPAN + 1) * SPAN, m)
    s_hi = prefix[e0:e1 + 1].max() - prefix[a0:a1 + 1].min()
    k_hi = max(k_min, s_hi * to_k)
    su, qu = prefix[e1] - prefix[a0], prefix2[e1] - prefix2[a0]
    root_v = np.sqrt(max(qu - su * su / (e1 - a0), 0.0))
    return best_k_bound(c1 * s_hi + r1 * root_v, a2, k_min, k_hi) >= threshold


def flux_row_kept(prefix, prefix2, shifts, listed, k, s, d, c1, r1, a2, k_min, threshold, start):
    """Whether the gate from the row's least deep flux sum keeps the row (gate_runs_study.py's)."""
    inside = listed[start:start + ROW]
    if not inside.any():
        return False
    first, last = shifts[start:start + ROW][[0, -1]]
    su, qu = prefix[last + d] - prefix[first], prefix2[last + d] - prefix2[first]
    root_v = np.sqrt(max(qu - su * su / (last + d - first), 0.0))
    at = np.flatnonzero(inside)[np.argmax(s[start:start + ROW][inside])]
    return best_k_bound(c1 * s[start + at] + r1 * root_v, a2, k_min, k[start + at]) >= threshold


def main(n_periods=40):
    plan, periods = case_plan("k2")
    tp, pc, lc = plan.templates, plan.templates.pieces, plan.lc
    passes = dict(ungated=0, gated=0, gated_grab8=0, packed=0, flux_gate=0)
    takes = dict(all=0, empty=0)
    rows_kept = rows_all = 0
    for (_, prefix, prefix2), widths, threshold in sampled_folds(plan, periods, n_periods):
        m = prefix.size - 1
        for wi, shifts, _, k, listed, s, _ in widths:
            d, c1, r1 = int(tp.widths[wi]), pc.mean[wi, 0], pc.rho[wi, 0]
            a2, k_min = lc.uniform_weight * pc.sum_a2[wi], tp.depth_min * tp.overshoot[wi] / tp.signal_depth
            to_k = tp.overshoot[wi] / tp.signal_depth / (lc.uniform_weight * d)
            kept = np.array([row_kept(prefix, prefix2, m, shifts, listed, d, c1, r1, a2, k_min, to_k, threshold, s)
                             for s in range(0, shifts.size, ROW)])
            flux = np.array([flux_row_kept(prefix, prefix2, shifts, listed, k, s, d, c1, r1, a2, k_min, threshold, r)
                             for r in range(0, shifts.size, ROW)])
            per_take_flux = np.add.reduceat(flux.astype(int), np.arange(0, flux.size, GRAB))
            passes["flux_gate"] += int(np.sum(-(-per_take_flux // AT_ONCE)))
            rows_kept += int(kept.sum())
            rows_all += kept.size
            per_take = np.add.reduceat(kept.astype(int), np.arange(0, kept.size, GRAB))
            passes["ungated"] += GRAB // AT_ONCE * per_take.size
            passes["gated"] += int(np.sum(-(-per_take // AT_ONCE)))
            per_take8 = np.add.reduceat(kept.astype(int), np.arange(0, kept.size, 2 * GRAB))
            passes["gated_grab8"] += int(np.sum(-(-per_take8 // AT_ONCE)))
            passes["packed"] += -(-int(kept.sum()) // AT_ONCE)
            takes["all"] += per_take.size
            takes["empty"] += int(np.sum(per_take == 0))
    print(f"rows kept by the gate: {rows_kept / rows_all:.3f} of {rows_all}")
    print(f"takes with no kept row: {takes['empty'] / takes['all']:.3f} of {takes['all']}")
    for name, n in passes.items():
        print(f"{name:8s} passes of 2 rows: {n:8d}  ({n / passes['ungated']:.3f} of ungated)")
    print(f"packed / gated: {passes['packed'] / passes['gated']:.3f}")


if __name__ == "__main__":
    main()
