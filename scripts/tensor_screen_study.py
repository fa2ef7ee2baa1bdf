"""How many shifts a half-precision tensor-core screen leaves for float64
re-checks (CPU study for issue 12, uniform weights), and the ``tensor``
backend's fragment addressing checked on the CPU.

A period's AR for every (shift, width) is the fold's Hankel matrix
H[i, j] = u[i + j] times the templates: a matrix product the tensor cores
could take in float16 (fp32 accumulation) at ~16x FP64's rate. Used as a
*screen*, not as the statistic: with u and a rounded to float16 (u scaled by
a power of two into range), every product carries a relative error of at most
(1 + 2^-11)^2 - 1 plus the accumulation's, so

    |AR - AR16| <= E_i = e (sum_j |a_j| |u_(i+j)|) + 2^-25 ||a||_1,

(2^-25 for u's values rounded to float16 subnormals) and sum |a||u| is at
most min(max|a| sum_window |u|, ||a||_2 ||u_window||_2), both from prefix
sums (the kernel takes the sum over its tile of 128 shifts' samples). Gains
G = 2 k AR - k^2 A2 get the pad 2 |k| E_i; every listed shift
whose upper gain reaches the period's best lower gain is re-checked in
float64, so the best (width, shift) is the exact one. ``split``: u as a sum
of two float16 numbers (two products; e falls to ~2^-11 + 2^-22, a's
rounding); ``split2``: a split too (three products, e ~2^-21).

The study computes AR16 from the rounded values exactly (float64), takes e
with a generous accumulation term (L 2^-23, L the template's length: far
more than fp32 accumulation of L terms, even truncating), and prints, per
case and variant, the re-checks per period against the listed shifts and
today's fine-stage survivors (the `cpu` backend's counters), and the share of
tiles of 128 shifts that pass ``tensor_screen.cu``'s k-free gate
(2 k AR - k^2 A2 <= max(AR, 0)^2 / A2 for every k) at the period's final
lower gain: what the kernel's gate could skip once the lower gain is known.

The ``tensor`` backend itself is checked against ``cpu`` by its tests and
``scripts/exactness.py``, and timed by ``scripts/gpu_timing.py``.
``--emulate`` checks the kernel's fragment addressing on the CPU: it rebuilds
each lane's A and B registers as the kernel reads them, multiplies by PTX's
m16n8k16 layout (m16n8k32 for the int8 gate's), and compares every tile's D
with float64 dot products against the allowance E (E8) the kernel forms.

    PYTHONPATH=.:scripts python scripts/tensor_screen_study.py --periods 40
    PYTHONPATH=.:scripts python scripts/tensor_screen_study.py --emulate
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from backends.tensor_tables import (TILE, U16, TensorTables, fold_shape, halves, int8_ksteps, int8_scale,
                                    power_of_two_scale)

from block_bound_study import sampled_folds, uniform_case, width_arrays  # scripts/ is on sys.path when run as a script
from gpu_timing import case_plan

TINY16 = 2.0 ** -25  # half of float16's least subnormal: the absolute rounding error below its normals
VARIANTS = {  # name: (products, relative error of one product before accumulation)
    "fp16": (1, (1 + U16) ** 2 - 1),
    "split": (2, (1 + U16) * (1 + U16 ** 2) - 1),
    "split2": (3, 3 * U16 ** 2 + U16 ** 3),
    "bf16": (1, (1 + 2.0 ** -7) ** 2 - 1),
}


def to_half(x, scale):
    """``x * scale`` rounded to float16, back in float64 and unscaled."""
    return (x * scale).astype(np.float16).astype(np.float64) / scale


def rounded(x, variant):
    """x as the screen sees it: one float16, a sum of two, or bfloat16 (by truncation, a bound's worst case)."""
    scale = power_of_two_scale(x)
    hi = to_half(x, scale)
    if variant == "bf16":
        return (x.astype(np.float32).view(np.uint32) & 0xFFFF0000).view(np.float32).astype(np.float64)
    if variant in ("split", "split2"):  # the remainder is exact in float64, its float16 has 11 more bits
        return hi + to_half(x - hi, scale * 2.0 ** 11)
    return hi


def study(case, n_periods, seed=0) -> dict:
    plan, periods = uniform_case(case)
    tp, lc = plan.templates, plan.lc
    tallies = {v: dict(periods=0, listed=0, rechecks=0, worst_error_of_bound=0.0, tiles=0, gated=0) for v in VARIANTS}
    for (u, _prefix, prefix2), widths, _threshold in sampled_folds(plan, periods, n_periods, seed):
        abs_prefix = np.concatenate([[0.0], np.cumsum(np.abs(u))])
        for variant, (_, rel) in VARIANTS.items():
            uq = rounded(u, variant)
            rows = []
            for wi, shifts, box, k, listed, *_ in widths:
                a = tp.a[tp.offsets[wi]:tp.offsets[wi + 1]]
                aq = rounded(a, "fp16" if variant == "split" else variant)
                ar = WINDOW(u, a.size)[shifts] @ a
                arq = WINDOW(uq, a.size)[shifts] @ aq
                absu = abs_prefix[shifts + a.size] - abs_prefix[shifts]
                l2u = np.sqrt(prefix2[shifts + a.size] - prefix2[shifts])
                dots = np.minimum(np.abs(a).max() * absu, np.sqrt(a @ a) * l2u)
                e = (rel + a.size * 2.0 ** -23) * dots + TINY16 * np.abs(a).sum()
                tallies[variant]["worst_error_of_bound"] = max(tallies[variant]["worst_error_of_bound"],
                                                               float((np.abs(arq - ar) / e).max()))
                a2 = lc.uniform_weight * float(a @ a)
                g_hat, pad = 2 * k * arq - k * k * a2, 2 * np.abs(k) * e
                rows.append((wi, shifts, listed, g_hat + pad, g_hat - pad, 2 * k * ar - k * k * a2,
                             tile_max(np.maximum(arq + e, 0.0) ** 2 / a2)))
            settle(rows, tallies[variant], (case, variant))
    return tallies


WINDOW = np.lib.stride_tricks.sliding_window_view


def tile_max(x) -> np.ndarray:
    """Per tile of 128 shifts (listed or not), the largest of ``x``: the k-free gate's bound of the tile."""
    tile = np.arange(x.size) // TILE
    top = np.full(tile[-1] + 1, -np.inf)
    np.maximum.at(top, tile, x)
    return top


def settle(rows, tally, label):
    """One period's screen: ``rows`` hold per width (index, shifts, listed,
    upper gains, lower gains, exact gains, tiles' gate bounds). The period's
    lower gain is its listed shifts' largest lower gain; the listed shifts
    whose upper gain reaches it are re-checked, and the best of them must be
    brute force's (asserted, ``label`` in the message); ``tally`` counts
    listed shifts, re-checks, tiles and tiles past the gate."""
    lower = max((float(low[listed].max()) for _, _, listed, _, low, _, _ in rows if listed.any()), default=-np.inf)

    def best_of(keep, g, wi, shifts):
        q = int(np.argmax(np.where(keep, g, -np.inf)))
        return (float(g[q]), wi, int(shifts[q])) if keep.any() else (-np.inf, 0, 0)

    exact_best = best = (-np.inf, 0, 0)
    for wi, shifts, listed, upper, _, g, gate in rows:
        candidate = listed & (upper >= lower)
        tally["listed"] += int(listed.sum())
        tally["rechecks"] += int(candidate.sum())
        tally["tiles"] += gate.size
        tally["gated"] += int((gate >= lower).sum())
        exact_best = max(exact_best, best_of(listed, g, wi, shifts), key=lambda x: x[0])
        best = max(best, best_of(candidate, g, wi, shifts), key=lambda x: x[0])
    assert best == exact_best, (label, best, exact_best)
    tally["periods"] += 1


def tile_product(x16, frag, s0, stride, ksteps) -> np.ndarray:
    """AR of one tile's 128 shifts, in shift order, as ``tensor_screen.cu``
    forms D: A's registers from ``frag`` (k-steps x 32 x 4, PTX's m16n8k16 A
    layout: lane (g, t) = (l / 4, l % 4) holds a0 (g, 2t..), a1 (g + 8,
    2t..), a2 (g, 2t + 8..), a3 (g + 8, 2t + 8..)); B's by ``load_b``'s
    ldmatrix from the float16 fold ``x16`` (its x4 loads two tiles, lanes 16-31
    giving the second's addresses; of one tile, lane l < 16 gives the address
    of column l & 7 at k (l & 8); 8 x 8 block q, from lanes 8q to 8q + 7,
    lands in register q, lane l holding its row (column n = l / 4) at k =
    2 (l % 4) and the next); products of the float16 values summed in
    float64. D[m, n] is the shift 16 n + m."""
    lane = np.arange(32)
    g, t = lane >> 2, lane & 3
    col_start = s0 + 16 * stride * (lane & 7) + (lane & 8)  # load_b's address, in samples
    d_tile = np.zeros((16, 8))
    for kk in range(ksteps):
        A, B = np.zeros((16, 16)), np.zeros((16, 8))
        for reg, (dr, dc) in enumerate(((0, 0), (8, 0), (0, 8), (8, 8))):
            A[g + dr, 2 * t + dc], A[g + dr, 2 * t + dc + 1] = halves(frag[kk, :, reg])
        for q in range(2):
            sample = col_start[8 * q + g] + 16 * kk + 2 * t  # block q's row g (column n = g), k = 2t and 2t + 1
            B[2 * t + 8 * q, g], B[2 * t + 8 * q + 1, g] = x16[sample], x16[sample + 1]
        d_tile += A @ B
    return d_tile.T.ravel()


def placed8(x, flip):
    """tensor_screen.cu's ``placed8``: byte x's place in the int8 fold (flip
    0) or in its copy for the even strides (flip 16)."""
    return x ^ ((x >> 3) & flip)


def tile_product8(q, frag, s0, stride, ksteps) -> np.ndarray:
    """The int8 gate's sums of one tile's 128 shifts, in shift order, as
    ``job_product`` forms D of int accumulators: A's registers from ``frag``
    (k-steps x 32 x 4 words of four int8, PTX's m16n8k32 layout:
    ``packed_fragments``); B's by ``load_b``'s ldmatrix from the int8 fold
    ``q`` (the fold, then its copy for the even strides: 2 mp bytes; lane
    l < 16 gives the address of column l & 7 at byte 16 ((l >> 3) & 1) of the
    k-step's 32, ``b_at``'s; an 8 x 8 block of 16-bit pairs lands lane l's row
    (column n = l / 4) bytes 4 (l % 4) .. 4 (l % 4) + 3 in its register: k =
    4 t + e, and 16 on for block 1). Exact integer sums."""
    lane = np.arange(32)
    g, t = lane >> 2, lane & 3
    col_start = s0 + 16 * stride * (lane & 7) + 2 * (lane & 8)  # b_at's byte address (int8)
    flip = 0 if stride % 2 else 16
    at = q.size // 2 if flip else 0
    words = frag.astype(np.uint32)
    d_tile = np.zeros((16, 8), np.int64)
    for kk in range(ksteps):
        A, B = np.zeros((16, 32), np.int64), np.zeros((32, 8), np.int64)
        for reg, (dr, dc) in enumerate(((0, 0), (8, 0), (0, 16), (8, 16))):
            for e in range(4):
                A[g + dr, 4 * t + dc + e] = ((words[kk, :, reg] >> (8 * e)) & 0xFF).astype(np.uint8).view(np.int8)
        for b in range(2):
            sample = at + placed8(col_start[8 * b + g] + 32 * kk, flip) + 4 * t  # block b's row g, k = 4t ..
            for e in range(4):
                B[4 * t + 16 * b + e, g] = q[sample + e]
        d_tile += A @ B
    return d_tile.T.ravel()


def emulate(case, n_periods=3, seed=0) -> dict:
    """Over every tile of every width of ``n_periods`` sampled periods, the
    largest |D - AR| / E (D from ``tile_product``, E as the kernel forms it:
    ``TensorTables`` and its per-curve terms), the same of the int8 gate's
    (``tile_product8``, E8) and, where the weights differ, the largest
    |D2 - A2| / (e_rel A2 + its subnormal terms), D2 the product of a^2
    against the folded weights."""
    from backends.implementations.cpu import fold_sort_period

    plan, periods = case_plan(case)
    tp, lc = plan.templates, plan.lc
    tb = TensorTables(tp)
    f, m = tb.fields, lc.size + tp.maxwidth
    listed_shifts, mp = fold_shape(tp, lc.size, 1)  # tile by tile
    weighted = not lc.uniform_weight > 0
    su, sw = power_of_two_scale((1.0 - lc.y) * lc.w), power_of_two_scale(lc.w)
    r8 = int8_scale((1.0 - lc.y) * lc.w)
    worst = {"ar": 0.0, "ar8": 0.0, "a2": 0.0}
    lo, hi = plan.width_windows(periods)
    for p in np.random.default_rng(seed).choice(periods.size, min(n_periods, periods.size), replace=False):
        fy, fw = fold_sort_period(lc.t, lc.y, lc.w, periods[p], tp.maxwidth)
        u = (1.0 - fy) * fw
        u16, w16 = (np.concatenate([x[:m] * scale, np.zeros(mp - m)]).astype(np.float16).astype(np.float64)
                    for x, scale in ((u, su), (fw, sw)))
        absu = np.concatenate([[0.0], np.cumsum(np.abs(u[:m]))])
        q = np.concatenate([np.rint(u[:m] * r8), np.zeros(mp - m)]).astype(np.int64)
        assert np.abs(q).max() <= 127
        q = np.concatenate([q, np.zeros(mp, np.int64)])
        q[mp + placed8(np.arange(mp), 16)] = q[:mp]  # the copy for the even strides
        for wi in range(lo[p], hi[p]):
            a = tp.a[tp.offsets[wi]:tp.offsets[wi + 1]]
            stride, n_shifts, ksteps = int(tp.strides[wi]), int(listed_shifts[wi]), int(f["ksteps"][wi])
            inv, inv_w = f["inv_sa"][wi] / su, f["inv_sa2"][wi] / sw
            e_abs = (2.0 ** -24 * f["a1"][wi] / su + a.size * 2.0 ** -49 * inv
                     + f["e_coef"][wi] * m * 2.0 ** -51 * absu[m])
            e_abs2 = (2.0 ** -24 * (a.size * lc.w.max() * f["inv_sa2"][wi] + f["sum_a2"][wi] / sw)
                      + a.size * 2.0 ** -49 * inv_w)
            frags = [x[4 * tb.f_off[wi]:4 * tb.f_off[wi] + 128 * ksteps].reshape(ksteps, 32, 4)
                     for x in (tb.frag, tb.frag2)]
            ksteps8 = int(int8_ksteps(ksteps))
            frag8 = tb.frag8[4 * tb.f8_off[wi]:4 * tb.f8_off[wi] + 128 * ksteps8].reshape(ksteps8, 32, 4)
            s8, e_abs8 = f["s8"][wi] / r8, (f["a1q"][wi] * (0.5 + 2.0 ** -40) / r8
                                           + f["d8"][wi] * (m * 2.0 ** -51 + 2.0 ** -22) * absu[m])
            for tile in range(-(-n_shifts // TILE)):
                s0 = tile * TILE * stride
                s = tile * TILE + np.arange(TILE)
                ok = s < n_shifts
                i = s[ok] * stride
                d_ar = tile_product(u16, frags[0], s0, stride, ksteps)[ok] * inv
                ar = WINDOW(u, a.size)[i] @ a
                window = absu[min(s0 + TILE * stride + a.size, m)] - absu[s0]
                e = f["e_coef"][wi] * window + e_abs
                worst["ar"] = max(worst["ar"], float(np.abs(d_ar - ar).max() / e))
                d_ar8 = tile_product8(q, frag8, s0, stride, ksteps8)[ok] * s8
                worst["ar8"] = max(worst["ar8"], float(np.abs(d_ar8 - ar).max() / (f["d8"][wi] * window + e_abs8)))
                if weighted:
                    d_a2 = tile_product(w16, frags[1], s0, stride, ksteps)[ok] * inv_w
                    a2 = WINDOW(fw, a.size)[i] @ (a * a)
                    worst["a2"] = max(worst["a2"], float((np.abs(d_a2 - a2) / (f["e_rel"][wi] * a2 + e_abs2)).max()))
    return worst


def weighted_study(case, n_periods, seed=0) -> dict:
    """The screen on a light curve whose weights differ (``k2w``): AR16 from
    u = (1 - F) W as with equal weights, and A2 = sum a^2 W (which then varies
    by shift) from a second float16 product of a^2 and the folded weights.
    Its terms are all positive, so |A2 - A2_16| <= e A2_16 / (1 - e): gains get
    2 |k| E from AR and k^2 e A2 / (1 - e) from A2; the depth filter and k are
    as before. As ``study`` (fp16 only): the best (width, shift) asserted, the
    re-checks, and the tiles past the k-free gate max(AR + E, 0)^2 / A2_lo."""
    from backends.implementations.cpu import fold_sort_period

    plan, periods = case_plan(case)
    tp, lc = plan.templates, plan.lc
    lo, hi = plan.width_windows(periods)
    rel = VARIANTS["fp16"][1]
    tally = dict(periods=0, listed=0, rechecks=0, tiles=0, gated=0, worst_a2_error_of_bound=0.0)
    for p in np.random.default_rng(seed).choice(periods.size, min(n_periods, periods.size), replace=False):
        fy, fw = fold_sort_period(lc.t, lc.y, lc.w, periods[p], tp.maxwidth)
        u = (1.0 - fy) * fw
        uq, wq = rounded(u, "fp16"), rounded(fw, "fp16")
        sums = (u, *(np.concatenate([[0.0], np.cumsum(x)]) for x in (fy, u, u * u)))
        absu = np.concatenate([[0.0], np.cumsum(np.abs(u))])
        rows = []
        for wi in range(lo[p], hi[p]):
            shifts, _, k, listed, *_ = width_arrays(plan, sums, wi)
            a = tp.a[tp.offsets[wi]:tp.offsets[wi + 1]]
            ar, a2 = WINDOW(u, a.size)[shifts] @ a, WINDOW(fw, a.size)[shifts] @ (a * a)
            arq = WINDOW(uq, a.size)[shifts] @ rounded(a, "fp16")
            a2_16 = WINDOW(wq, a.size)[shifts] @ rounded(a * a, "fp16")
            e_a2 = (rel + a.size * 2.0 ** -23) / (1 - rel - a.size * 2.0 ** -23)
            tally["worst_a2_error_of_bound"] = max(tally["worst_a2_error_of_bound"],
                                                   float((np.abs(a2 - a2_16) / (e_a2 * a2_16)).max()))
            e = (rel + a.size * 2.0 ** -23) * np.abs(a).max() * (absu[shifts + a.size] - absu[shifts])
            a2_lo, a2_hi = a2_16 * (1 - e_a2), a2_16 * (1 + e_a2)
            rows.append((wi, shifts, listed, 2 * k * arq + 2 * np.abs(k) * e - k * k * a2_lo,
                         2 * k * arq - 2 * np.abs(k) * e - k * k * a2_hi, 2 * k * ar - k * k * a2,
                         tile_max(np.maximum(arq + e, 0.0) ** 2 / a2_lo)))
        settle(rows, tally, case)
    return tally


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", nargs="+", default=["k2", "tess"])
    parser.add_argument("--periods", type=int, default=40)
    parser.add_argument("--emulate", action="store_true")
    parser.add_argument("--weighted", action="store_true", help="weighted_study on the k2w case")
    args = parser.parse_args(argv)
    if args.weighted:
        print(json.dumps(weighted_study("k2w", args.periods)))
        return
    if args.emulate:
        for case in args.cases:
            print(case, "worst |D - AR| / E, |D8 - AR| / E8, |D2 - A2| / its allowance:", emulate(case))
        return
    print(f"{'case':6} {'variant':7} {'products':>8} {'periods':>7} {'listed/period':>13} "
          f"{'rechecks/period':>15} {'of listed':>9} {'worst err/bound':>15} {'tiles past gate':>15}")
    for case in args.cases:
        for variant, tally in study(case, args.periods).items():
            p = tally["periods"]
            print(f"{case:6} {variant:7} {VARIANTS[variant][0]:8d} {p:7d} {tally['listed'] / p:13.0f} "
                  f"{tally['rechecks'] / p:15.1f} {tally['rechecks'] / tally['listed']:9.2e} "
                  f"{tally['worst_error_of_bound']:15.3f} {tally['gated'] / tally['tiles']:15.2e}")


if __name__ == "__main__":
    main()
