"""How much of ``tensor``'s k-loop a neighbouring width's AR could skip (CPU
study for issue 13: 500 K2-like curves/s needs the kernel ~22 % faster).

Two widths of one phase-shift stride share their shifts. Pad both templates to
one length L; then, by Cauchy-Schwarz,

    AR_w2(s) <= AR_w1(s) + ||a_w2 - a_w1||_2 ||u[s : s + L]||_2,

so a tile of w2 whose bound cannot pass the k-free gate (max(AR, 0)^2 / A2
below the period's lower gain) needs no k-loop of its own. Widths are paired in
order (the second of each same-stride pair bounded by the first). The study
takes exact AR and each period's final lower gain, so it gives an upper limit:
the kernel's lower gain rises during the screen, and its AR carries float16
error. It prints the share of the k-loop's cost (tiles x template length) that
the pairs could skip, and asserts every bound holds.

    PYTHONPATH=.:scripts python scripts/width_pair_study.py --case k2 --periods 60
"""

from __future__ import annotations

import argparse

import numpy as np

from backends.tensor_tables import TILE

from block_bound_study import sampled_folds, uniform_case  # scripts/ is on sys.path when run as a script
from tensor_screen_study import WINDOW, tile_max


def study(case, n_periods, seed=1) -> dict:
    plan, periods = uniform_case(case)
    tp, lc = plan.templates, plan.lc
    tally = dict(widths=0, paired=0, tiles=0, cost=0.0, open_after_loop=0, paired_cost=0.0, skipped_cost=0.0)
    for (u, _prefix, prefix2), widths, _threshold in sampled_folds(plan, periods, n_periods, seed):
        rows = []
        for wi, shifts, _box, k, listed, *_ in widths:
            a = tp.a[tp.offsets[wi]:tp.offsets[wi + 1]]
            ar = WINDOW(u, a.size)[shifts] @ a
            a2 = lc.uniform_weight * float(a @ a)
            rows.append((int(tp.strides[wi]), shifts, a, ar, a2, np.where(listed, 2 * k * ar - k * k * a2, -np.inf)))
        lower = max(float(row[5].max()) for row in rows)
        for j, (stride, shifts, a, ar, a2, _) in enumerate(rows):
            ntiles = -(-shifts.size // TILE)
            tally["widths"] += 1
            tally["tiles"] += ntiles
            tally["cost"] += ntiles * a.size
            tally["open_after_loop"] += int((tile_max(np.maximum(ar, 0.0) ** 2 / a2) >= lower).sum())
            if j % 2 == 0 or rows[j - 1][0] != stride:
                continue
            _, shifts1, a1, ar1, _, _ = rows[j - 1]
            length, n = max(a.size, a1.size), min(shifts.size, shifts1.size)
            da = np.zeros(length)
            da[:a.size] += a
            da[:a1.size] -= a1
            ends = np.minimum(shifts[:n] + length, prefix2.size - 1)
            bound = np.full(shifts.size, np.inf)
            bound[:n] = ar1[:n] + np.linalg.norm(da) * np.sqrt(np.maximum(prefix2[ends] - prefix2[shifts[:n]], 0.0))
            assert np.all(ar <= bound + 1e-9 * np.maximum(np.abs(bound), 1.0)), (case, j)
            skipped = tile_max(np.maximum(bound, 0.0) ** 2 / a2) < lower
            tally["paired"] += 1
            tally["paired_cost"] += ntiles * a.size
            tally["skipped_cost"] += float(skipped.sum()) * a.size
    return tally


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", default="k2")
    ap.add_argument("--periods", type=int, default=60)
    args = ap.parse_args(argv)
    t = study(args.case, args.periods)
    print(f"{args.case}, {args.periods} periods: {t['paired']} of {t['widths']} widths paired; tiles open after "
          f"the k-loop {t['open_after_loop'] / t['tiles']:.3f}; k-loop cost the pairs could skip "
          f"{t['skipped_cost'] / t['cost']:.3f} of all ({t['skipped_cost'] / max(t['paired_cost'], 1.0):.3f} "
          "of the paired widths')")


if __name__ == "__main__":
    main()
