"""How many of the one-piece bound's survivors a better floor would remove
(CPU study, K2-like timing case, 20 sampled periods, no rounding pads): the
survivors of the one-piece, 2-piece and 6-piece linear bounds at the seed
threshold T (as `cpu` and `pruned` seed it) and at the period's best gain.

    cd scripts && PYTHONPATH=..:.:../reports/gpu/pruned_gate_2026-11-29e_H200 \
        python ../reports/gpu/pruned_gate_2026-12-01_H200/floor_study.py
"""

import numpy as np

from backends import pruning
from block_bound_study import sampled_folds
from fine_stage_study import linear_bound
from gpu_timing import case_plan


def main(n_periods=20):
    plan, periods = case_plan("k2")
    tp, pc, w0 = plan.templates, plan.templates.pieces, plan.lc.uniform_weight
    tally = dict(deep=0, one_T=0, one_best=0, lin2_T=0, lin2_best=0, lin6_T=0, lin6_best=0, exact_T=0)
    ratios = []
    for (u, pu, pu2), widths, threshold in sampled_folds(plan, periods, n_periods, seed=5):
        pju = np.concatenate([[0.0], np.cumsum(np.arange(u.size) * u)])
        gains, best = [], threshold  # the best gain is a one-piece survivor's at T
        for wi, shifts, box, k, listed, s, v in widths:
            a = tp.a[tp.offsets[wi]:tp.offsets[wi + 1]]
            a2 = w0 * pc.sum_a2[wi]
            one = 2 * k * (pc.mean[wi, 0] * s + pc.rho[wi, 0] * np.sqrt(v)) - k * k * a2
            tally["deep"] += int(listed.sum())
            kept = listed & (one >= threshold)
            starts, kk = shifts[kept], k[kept]
            gain = lambda ar: 2 * kk * ar - kk * kk * a2  # noqa: E731
            exact = gain(np.array([a @ u[i:i + a.size] for i in starts]))
            lin2 = gain(linear_bound(pu, pu2, pju, starts, a, pruning.segment(a, 2, linear=True), False))
            lin6 = gain(linear_bound(pu, pu2, pju, starts, a, pruning.segment(a, 6, linear=True), False))
            best = max(best, exact.max(initial=0.0))
            gains.append((one[listed], lin2, lin6, exact))
        ratios.append(threshold / best)
        for one, lin2, lin6, exact in gains:
            for name, g in (("one", one), ("lin2", lin2), ("lin6", lin6)):
                tally[f"{name}_T"] += int((g >= threshold).sum())
                tally[f"{name}_best"] += int((g >= best).sum())
            tally["exact_T"] += int((exact >= threshold).sum())
    print(f"K2-like, {n_periods} sampled periods, no pads: shifts passing each bound at the seed threshold T and "
          "at the period's best gain")
    for name, count in tally.items():
        print(f"  {name:10s} {count:,}")
    print("T / best per period:", " ".join(f"{r:.3f}" for r in sorted(ratios)))


if __name__ == "__main__":
    main()
