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

from block_bound_study import best_k_bound, runs_bounds, sampled_folds, union_root
from gpu_timing import case_plan

ROW, GRAB, AT_ONCE, SPAN = 32, 4, 2, 32


def gate_rows(prefix, prefix2, m, shifts, listed, k, s, d, c1, r1, a2, k_min, to_k, threshold):
    """Per row of 32 shifts: whether row_gate (runs of 32, union widened)
    keeps it, and whether the gate from the row's least deep flux sum (exact
    union) would; neither keeps a row without a listed shift."""
    runs, flux = [], []
    for start in range(0, shifts.size, ROW):
        inside = listed[start:start + ROW]
        if not inside.any():
            runs.append(False)
            flux.append(False)
            continue
        first, last = shifts[start:start + ROW][[0, -1]]
        s_hi, a0, e1 = runs_bounds(prefix, m, first, last, d, SPAN)
        root_v = union_root(prefix, prefix2, a0, e1)
        runs.append(best_k_bound(c1 * s_hi + r1 * root_v, a2, k_min, max(k_min, s_hi * to_k)) >= threshold)
        at = start + np.flatnonzero(inside)[np.argmax(s[start:start + ROW][inside])]  # the least flux sum's
        root_v = union_root(prefix, prefix2, first, last + d)
        flux.append(best_k_bound(c1 * s[at] + r1 * root_v, a2, k_min, k[at]) >= threshold)
    return np.array(runs), np.array(flux)


def per_take(kept, grab=GRAB):
    """Kept rows per take of ``grab`` rows."""
    return np.add.reduceat(kept.astype(int), np.arange(0, kept.size, grab))


def passes(kept, grab=GRAB) -> int:
    """Passes of AT_ONCE rows the gated takes of ``grab`` rows run."""
    return int(np.sum(-(-per_take(kept, grab) // AT_ONCE)))


def main(n_periods=40):
    plan, periods = case_plan("k2")
    tp, pc, lc = plan.templates, plan.templates.pieces, plan.lc
    counted = dict(ungated=0, gated=0, gated_grab8=0, packed=0, flux_gate=0)
    takes = dict(all=0, empty=0)
    rows_kept = rows_all = 0
    for (_, prefix, prefix2), widths, threshold in sampled_folds(plan, periods, n_periods):
        m = prefix.size - 1
        for wi, shifts, _, k, listed, s, _ in widths:
            d, c1, r1 = int(tp.widths[wi]), pc.mean[wi, 0], pc.rho[wi, 0]
            a2, k_min = lc.uniform_weight * pc.sum_a2[wi], tp.depth_min * tp.overshoot[wi] / tp.signal_depth
            to_k = tp.overshoot[wi] / tp.signal_depth / (lc.uniform_weight * d)
            kept, flux = gate_rows(prefix, prefix2, m, shifts, listed, k, s, d, c1, r1, a2, k_min, to_k, threshold)
            rows_kept += int(kept.sum())
            rows_all += kept.size
            takes["all"] += per_take(kept).size
            takes["empty"] += int(np.sum(per_take(kept) == 0))
            counted["ungated"] += GRAB // AT_ONCE * per_take(kept).size
            counted["gated"] += passes(kept)
            counted["gated_grab8"] += passes(kept, 2 * GRAB)
            counted["packed"] += -(-int(kept.sum()) // AT_ONCE)
            counted["flux_gate"] += passes(flux)
    print(f"rows kept by the gate: {rows_kept / rows_all:.3f} of {rows_all}")
    print(f"takes with no kept row: {takes['empty'] / takes['all']:.3f} of {takes['all']}")
    for name, n in counted.items():
        print(f"{name:8s} passes of 2 rows: {n:8d}  ({n / counted['ungated']:.3f} of ungated)")
    print(f"packed / gated: {counted['packed'] / counted['gated']:.3f}")


if __name__ == "__main__":
    main()
