"""How many shifts a half-precision tensor-core screen would leave for float64
re-checks (CPU study for issue 12; uniform weights; not a backend).

A period's AR for every (shift, width) is the fold's Hankel matrix
H[i, j] = u[i + j] times the templates: a matrix product the tensor cores
could take in float16 (fp32 accumulation) at ~16x FP64's rate. Used as a
*screen*, not as the statistic: with u and a rounded to float16 (u scaled by
a power of two into range), every product carries a relative error of at most
(1 + 2^-11)^2 - 1 plus the accumulation's, so

    |AR - AR16| <= E_i = e (sum_j |a_j| |u_(i+j)|) + 2^-25 ||a||_1,

(2^-25 for u's values rounded to float16 subnormals) and sum |a||u| is at
most min(max|a| sum_window |u|, ||a||_2 ||u_window||_2), both from prefix
sums (the GPU prototype takes the sum over its tile of 128 shifts' samples). Gains G = 2 k AR - k^2 A2 get the pad 2 |k| E_i; every listed shift
whose upper gain reaches the period's best lower gain is re-checked in
float64, so the best (width, shift) is the exact one. ``split``: u as a sum
of two float16 numbers (two products; e falls to ~2^-11 + 2^-22, a's
rounding); ``split2``: a split too (three products, e ~2^-21).

The study computes AR16 from the rounded values exactly (float64), takes e
with a generous accumulation term (L 2^-23, L the template's length: far
more than fp32 accumulation of L terms, even truncating), and prints, per
case and variant, the re-checks per period against the listed shifts and
today's fine-stage survivors (the `cpu` backend's counters), and the share of
tiles of 128 shifts that pass ``tc_screen.cu``'s k-free gate
(2 k AR - k^2 A2 <= max(AR, 0)^2 / A2 for every k) at the period's final
lower gain: what the kernel's gate could skip once the lower gain is known.

``--gpu`` runs the whole search with ``tc_screen.cu`` (``TensorScreen``: one
block per period does its fold with ``pruned``'s bucket sort, the prefix
sums, float16 ``mma.sync`` for every listed shift's AR, the screen and the
float64 re-checks), checks every period's chi2 against the ``cpu`` backend
and times it, warm medians, against ``pruned`` in the same process. ``--emulate``
checks the kernel's fragment addressing on the CPU: it rebuilds each lane's
A and B registers as the kernel reads them, multiplies by PTX's m16n8k16
layout, and compares every tile's D with float64 dot products.

    PYTHONPATH=.:scripts python scripts/tensor_screen_study.py --periods 40
    PYTHONPATH=.:scripts python scripts/tensor_screen_study.py --emulate
    PYTHONPATH=.:scripts python scripts/tensor_screen_study.py --gpu --cases k2 --shapes 512:2:2 256:1:1
"""

from __future__ import annotations

import argparse
import json
import math
import pathlib
import time

import numpy as np

from backends import pruning
from backends.implementations.cpu import shift_end
from backends.kernel_cache import CUDA_DIR

from block_bound_study import sampled_folds  # scripts/ is on sys.path when run as a script
from fft_study import compare
from gpu_timing import case_plan, time_backend

U16 = 2.0 ** -11
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
    scale = 2.0 ** (14 - np.ceil(np.log2(np.abs(x).max())))
    hi = to_half(x, scale)
    if variant == "bf16":
        return (x.astype(np.float32).view(np.uint32) & 0xFFFF0000).view(np.float32).astype(np.float64)
    if variant in ("split", "split2"):  # the remainder is exact in float64, its float16 has 11 more bits
        return hi + to_half(x - hi, scale * 2.0 ** 11)
    return hi


def study(case, n_periods, seed=0) -> dict:
    plan, periods = case_plan(case)
    tp, lc = plan.templates, plan.lc
    if not lc.uniform_weight > 0:
        raise SystemExit(f"{case}: uniform weights only")
    tallies = {v: dict(periods=0, listed=0, rechecks=0, worst_error_of_bound=0.0, tiles=0, gated=0) for v in VARIANTS}
    for (u, _prefix, prefix2), widths, _threshold in sampled_folds(plan, periods, n_periods, seed):
        abs_prefix = np.concatenate([[0.0], np.cumsum(np.abs(u))])
        for variant, (_, rel) in VARIANTS.items():
            uq = rounded(u, variant)
            exact_best, lower, rows = (-np.inf, 0, 0), -np.inf, []
            for wi, shifts, box, k, listed, *_ in widths:
                a = tp.a[tp.offsets[wi]:tp.offsets[wi + 1]]
                aq = rounded(a, "fp16" if variant == "split" else variant)
                window = np.lib.stride_tricks.sliding_window_view
                ar = window(u, a.size)[shifts] @ a
                arq = window(uq, a.size)[shifts] @ aq
                absu = abs_prefix[shifts + a.size] - abs_prefix[shifts]
                l2u = np.sqrt(prefix2[shifts + a.size] - prefix2[shifts])
                dots = np.minimum(np.abs(a).max() * absu, np.sqrt(a @ a) * l2u)
                e = (rel + a.size * 2.0 ** -23) * dots + TINY16 * np.abs(a).sum()
                tallies[variant]["worst_error_of_bound"] = max(tallies[variant]["worst_error_of_bound"],
                                                               float((np.abs(arq - ar) / e).max()))
                a2 = lc.uniform_weight * float(a @ a)
                g_hat, pad = 2 * k * arq - k * k * a2, 2 * np.abs(k) * e
                g = 2 * k * ar - k * k * a2
                if listed.any():
                    lower = max(lower, float((g_hat - pad)[listed].max()))
                    q = int(np.argmax(np.where(listed, g, -np.inf)))
                    if g[q] > exact_best[0]:
                        exact_best = (float(g[q]), wi, int(shifts[q]))
                # tc_screen.cu's k-free gate per tile of 128 listed-or-not shifts: max(AR + e, 0)^2 / A2
                tile = np.arange(shifts.size) // TILE
                top = np.full(tile[-1] + 1, -np.inf)
                np.maximum.at(top, tile, arq + e)
                rows.append((wi, shifts, listed, g_hat + pad, g, np.maximum(top, 0.0) ** 2 / a2))
            best = (-np.inf, 0, 0)
            for wi, shifts, listed, upper, g, gate in rows:
                tallies[variant]["tiles"] += gate.size
                tallies[variant]["gated"] += int((gate >= lower).sum())
                candidate = listed & (upper >= lower)
                tallies[variant]["listed"] += int(listed.sum())
                tallies[variant]["rechecks"] += int(candidate.sum())
                if candidate.any():
                    q = int(np.argmax(np.where(candidate, g, -np.inf)))
                    if g[q] > best[0]:
                        best = (float(g[q]), wi, int(shifts[q]))
            assert best == exact_best, (case, variant, best, exact_best)
            tallies[variant]["periods"] += 1
    return tallies


TILE = 128  # strided shifts per warp job: 16 rows x 8 columns of one m16n8 product
SOURCE = pathlib.Path(__file__).with_name("tc_screen.cu")


def power_of_two_scale(x) -> float:
    """2^e with max|x| 2^e in (2^13, 2^14]: float16 range with room for rounding."""
    return 2.0 ** (14 - math.ceil(math.log2(float(np.abs(x).max()))))


def half_bits(x) -> np.ndarray:
    return np.asarray(x, np.float64).astype(np.float16).view(np.uint16).astype(np.uint32)


def halves(x):
    """(low, high) float16 halves of half2 registers, as float64."""
    return tuple((y & 0xFFFF).astype(np.uint16).view(np.float16).astype(np.float64) for y in (x, x >> 16))


class Tables:
    """Per template (width index) what ``tc_screen.cu`` reads: d, stride,
    listed shifts, k-steps, the depth filter's flux-sum limit, k per unit box,
    A2, the allowance's coefficients, 1 / (u's scale x a's scale), and the
    banded B fragments (k-steps x 32 lanes x 2 half2 registers)."""

    def __init__(self, plan):
        tp, lc = plan.templates, plan.lc
        n = lc.size
        self.m = m = n + tp.maxwidth
        u = (1.0 - lc.y) * lc.w
        self.uscale = su = power_of_two_scale(u)
        u1 = float(np.abs(u).sum()) * (m / n + 1)
        lane = np.arange(32)
        g, t = lane >> 2, lane & 3
        fields = {k: [] for k in ("d", "stride", "n_shifts", "ksteps", "e_coef", "e_abs", "inv_scale")}
        frags, offsets, self.mp = [], [0], 0
        for wi in range(tp.widths.size):
            a = tp.a[tp.offsets[wi]:tp.offsets[wi + 1]]
            d, stride, length = int(tp.widths[wi]), int(tp.strides[wi]), a.size
            n_shifts = (shift_end(m, n, d, stride) - 1) // stride + 1
            ksteps = -(-(length + 7 * stride) // 16)
            sa = power_of_two_scale(a)
            band = np.zeros((16 * ksteps + 16, 8), np.float64)
            for c in range(8):
                band[stride * c:stride * c + length, c] = a * sa
            bits = half_bits(band)
            rows = 16 * np.arange(ksteps)[:, None] + 2 * t[None, :]
            b0 = bits[rows, g] | (bits[rows + 1, g] << 16)
            b1 = bits[rows + 8, g] | (bits[rows + 9, g] << 16)
            frags.append(np.stack([b0, b1], axis=-1).ravel())
            offsets.append(offsets[-1] + frags[-1].size)
            rel = (1 + U16) ** 2 - 1 + length * 2.0 ** -23 + (length + 2) * 2.0 ** -53
            e_coef = rel * float(np.abs(a).max()) + 2.0 ** -24 / sa
            e_abs = 2.0 ** -24 * float(np.abs(a).sum()) / su + length * 2.0 ** -49 / (su * sa) \
                + e_coef * m * 2.0 ** -51 * u1
            for key, value in zip(fields, (d, stride, n_shifts, ksteps, e_coef, e_abs, 1.0 / (su * sa))):
                fields[key].append(value)
            self.mp = max(self.mp, (-(-n_shifts // TILE) + 1) * TILE * stride + 16 * ksteps + 2)  # + a job's spare tile
        self.mp += self.mp % 2
        self.fields = {k: np.array(v, np.int32 if k in ("d", "stride", "n_shifts", "ksteps") else np.float64)
                       for k, v in fields.items()}
        self.fields["s_max"] = pruning.depth_limits(tp.widths, tp.depth_min)
        self.fields["kscale"] = tp.overshoot / tp.signal_depth
        self.fields["a2"] = np.array([lc.uniform_weight * float(tp.a[tp.offsets[wi]:tp.offsets[wi + 1]] @
                                                               tp.a[tp.offsets[wi]:tp.offsets[wi + 1]])
                                      for wi in range(tp.widths.size)])
        self.bfrag = np.concatenate(frags).astype(np.uint32)
        self.b_off = np.array(offsets[:-1], np.int64)


def emulate(case, n_periods=3, seed=0) -> float:
    """Largest |D - AR| / E over every tile of every width of ``n_periods``
    sampled periods, D formed from the registers ``tc_screen.cu`` loads
    (lane (g, t) = (lane / 4, lane % 4); PTX's m16n8k16 fragments: a0 (g,
    2t..), a1 (g + 8, 2t..), a2 (g, 2t + 8..), a3 (g + 8, 2t + 8..); b0 (k =
    2t.., n = g), b1 (k = 2t + 8.., n = g); d (g, 2t), (g, 2t + 1), (g + 8,
    2t), (g + 8, 2t + 1)), products of the float16 values summed in float64."""
    plan, periods = case_plan(case)
    tb, tp = Tables(plan), plan.templates
    f = tb.fields
    worst = 0.0
    lane = np.arange(32)
    g, t = lane >> 2, lane & 3
    for (u, *_), widths, _ in sampled_folds(plan, periods, n_periods, seed):
        uh = np.zeros(tb.mp, np.float64)
        uh[:tb.m] = u[:tb.m] * tb.uscale
        u16 = uh.astype(np.float16).astype(np.float64)
        absu = np.concatenate([[0.0], np.cumsum(np.abs(u))])
        for wi, *_ in widths:
            a = tp.a[tp.offsets[wi]:tp.offsets[wi + 1]]
            stride, n_shifts, ksteps = int(f["stride"][wi]), int(f["n_shifts"][wi]), int(f["ksteps"][wi])
            frag = tb.bfrag[tb.b_off[wi]:tb.b_off[wi] + 64 * ksteps].reshape(ksteps, 32, 2)
            for tile in range(-(-n_shifts // TILE)):
                s0 = tile * TILE * stride
                d_tile = np.zeros((16, 8))
                for kk in range(ksteps):
                    A, B = np.zeros((16, 16)), np.zeros((16, 8))
                    at = s0 + 8 * stride * g + 2 * t + 16 * kk  # the sample of a0's low half
                    for reg, (dr, dc) in enumerate(((0, 0), (8, 0), (0, 8), (8, 8))):
                        col = 2 * t + dc
                        sample = at + 8 * stride * dr + dc
                        A[g + dr, col], A[g + dr, col + 1] = u16[sample], u16[sample + 1]
                    for reg, dk in enumerate((0, 8)):
                        lo_h, hi_h = halves(frag[kk, :, reg])
                        B[2 * t + dk, g], B[2 * t + dk + 1, g] = lo_h, hi_h
                    d_tile += A @ B
                s = tile * TILE + np.arange(TILE)
                ok = s < n_shifts
                i = s[ok] * stride
                d_ar = d_tile.ravel()[ok] * f["inv_scale"][wi]
                ar = np.lib.stride_tricks.sliding_window_view(u, a.size)[i] @ a
                e = f["e_coef"][wi] * (absu[min(s0 + TILE * stride + a.size, tb.m)] - absu[s0]) + f["e_abs"][wi]
                worst = max(worst, float(np.abs(d_ar - ar).max() / e))
    return worst


class TensorScreen:
    """The search of one plan with ``tc_screen.cu`` (CuPy, nvcc), ``chunk``
    periods a launch: the fold, prefix sums, screen and re-checks of each
    period in one block."""

    def __init__(self, cupy, plan, periods, chunk=16384, threads=384, cap=512, tpj=2, min_blocks=2):
        lc = plan.lc
        if not lc.uniform_weight > 0:
            raise SystemExit("uniform weights only")
        self.cp, self.plan, self.chunk = cupy, plan, chunk
        self.periods = np.asarray(periods, np.float64)
        self.tables = tb = Tables(plan)
        lo, hi = plan.width_windows(self.periods)
        f = tb.fields
        put = cupy.asarray
        self.dev = dict(periods=put(self.periods), lo=put(lo.astype(np.int32)), nd=put((hi - lo).astype(np.int32)))
        self.args = [put(f[k]) for k in ("d", "stride", "n_shifts", "ksteps", "s_max", "kscale", "a2", "e_coef",
                                          "e_abs", "inv_scale")]
        self.args += [put(tb.b_off), put(tb.bfrag), put(plan.templates.offsets.astype(np.int64)),
                      put(plan.templates.a)]
        self.t, self.y, self.w, self.n = put(lc.t), put(lc.y), float(lc.uniform_weight), lc.size
        self.order = cupy.empty((min(chunk, self.periods.size), lc.size), np.int32)
        self.threads, self.cap = threads, cap
        self.kernel = cupy.RawModule(code=SOURCE.read_text(), backend="nvcc", options=(
            "-std=c++17", "-lineinfo", f"-I{CUDA_DIR}", f"-DTHREADS={threads}", f"-DCAP={cap}", f"-DTPJ={tpj}",
            f"-DMIN_BLOCKS={min_blocks}")).get_function("tc_search")
        self.smem = 2 * (tb.m + 1) * 8 + tb.mp * 2
        self.kernel.max_dynamic_shared_size_bytes = self.smem
        n_shifts = f["n_shifts"]
        self.tiles = int(sum((-(-n_shifts[lo_:hi_] // TILE)).sum() for lo_, hi_ in zip(lo, hi)))
        self.kernel_s = 0.0

    def search(self):
        """(gain, width index or -1, shift) per period; the kernels' seconds in
        ``kernel_s`` (CUDA events), ``kept``, ``rechecked``, ``screened`` and
        ``overflow`` summed."""
        cp, tb, dev = self.cp, self.tables, self.dev
        self.kernel_s, self.kept, self.rechecked, self.overflow, self.screened = 0.0, 0, 0, 0, 0
        size = self.periods.size
        gain, kept = cp.empty(size), cp.empty(size, cp.int32)
        rechecked, screened = cp.zeros(size, cp.int32), cp.zeros(size, cp.int32)
        width, shift = cp.empty(size, cp.int32), cp.empty(size, cp.int32)
        for p0 in range(0, size, self.chunk):
            rows = min(self.chunk, size - p0)
            start, end = cp.cuda.Event(), cp.cuda.Event()
            start.record()
            self.kernel((rows,), (self.threads,), (
                self.t, self.y, np.float64(self.w), np.int32(self.n), np.int32(tb.m), np.int32(tb.mp),
                np.float64(tb.uscale), dev["periods"][p0:], self.order, dev["lo"][p0:], dev["nd"][p0:], *self.args,
                np.float64(2.0 ** -48), gain[p0:], width[p0:], shift[p0:], kept[p0:], rechecked[p0:],
                screened[p0:]), shared_mem=self.smem)
            end.record()
            end.synchronize()
            self.kernel_s += cp.cuda.get_elapsed_time(start, end) / 1e3
        kept, width = kept.get(), width.get().astype(np.int64)
        self.kept = int(kept[kept > 0].sum())
        self.overflow = int((kept < 0).sum())
        self.rechecked, self.screened = int(rechecked.sum()), int(screened.sum())
        return np.where(width < 0, 0.0, gain.get()), width, shift.get().astype(np.int64)


def gpu_run(cases, repeats, chunk, shapes, pruned=True) -> dict:
    """Per case and shape (THREADS:TPJ:MIN_BLOCKS): exactness against ``cpu``,
    kept, re-checked and screened counts, warm medians of the whole search
    (wall, synchronized) and of its kernels (CUDA events), and ``pruned``'s
    whole search in the same process."""
    import cupy

    out = {}
    for case in cases:
        plan, periods = case_plan(case)
        for shape in shapes:
            threads, tpj, min_blocks = (int(x) for x in shape.split(":"))
            search = TensorScreen(cupy, plan, periods, chunk, threads, tpj=tpj, min_blocks=min_blocks)
            found = search.search()
            entry = dict(case=case, shape=shape, periods=int(periods.size), n=plan.lc.size, kept=search.kept,
                         rechecked=search.rechecked, overflow=search.overflow, smem=search.smem,
                         tiles=search.tiles, screened_tiles=search.screened)
            entry["chi2_worst_rel"], entry["rows_differ"] = compare(plan, periods, found)
            walls, kernels = [], []
            for _ in range(repeats):
                cupy.cuda.Device().synchronize()
                start = time.perf_counter()
                search.search()
                walls.append(time.perf_counter() - start)
                kernels.append(search.kernel_s)
            if repeats:
                entry.update(search_warm_median_s=float(np.median(walls)),
                             kernel_warm_median_s=float(np.median(kernels)))
            out[f"{case}_{shape}"] = entry
            print(json.dumps(entry), flush=True)
        if repeats and pruned:
            out[f"{case}_pruned_warm_median_s"] = time_backend("pruned", plan, periods, repeats)[1]
            print(case, "pruned warm median", out[f"{case}_pruned_warm_median_s"], flush=True)
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", nargs="+", default=["k2", "tess"])
    parser.add_argument("--periods", type=int, default=40)
    parser.add_argument("--emulate", action="store_true")
    parser.add_argument("--gpu", action="store_true")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--chunk", type=int, default=16384, help="periods a launch")
    parser.add_argument("--shapes", nargs="+", default=["384:2:2"],
                        help="THREADS:TILES_PER_JOB:MIN_BLOCKS of tc_screen.cu")
    parser.add_argument("--out")
    args = parser.parse_args(argv)
    if args.emulate:
        for case in args.cases:
            print(case, "worst |D - AR| / E:", emulate(case))
        return
    if args.gpu:
        result = gpu_run(args.cases, args.repeats, args.chunk, args.shapes)
        if args.out:
            pathlib.Path(args.out).write_text(json.dumps(result, indent=1))
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
