"""``cpu``: the exact reference backend, numba on the CPU, parallel over periods,
with the certified pruning cascade of ``backends.pruning``.

It computes TLS 2.0.4's exact statistic (``core.search_period``): per period
fold at epoch 0, stable sort by phase, append the first ``maxwidth`` samples
(wrap-around patch), and for every allowed template width and every stride-th
shift whose box depth exceeds ``depth_min`` score the template scaled to
depth = box depth x overshoot. The chi2 of a shift is the flat chi2 minus a gain,

    chi2_i = chi2_flat - (2 k AR_i - k^2 A2_i),
    AR_i = sum_j a_j r_{i+j} w_{i+j},  A2_i = sum_j a_j^2 w_{i+j},  r = 1 - flux,

which equals TLS's in-transit + out-of-transit - edge-correction sum exactly,
so the best fit of a period is the shift with the largest positive gain, ties
to the first. The cascade evaluates that gain only where it can matter:
threshold T = the best exact gain at each width's deepest box (the seed),
then per shift the depth filter, the one-piece bound, the K-piece bound
(linear pieces of a for AR, constant pieces of a^2 for A2), and the exact dot
products of the survivors, in TLS's order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np
from numba.core import cgutils, types
from numba.extending import intrinsic

from backends.protocol import PeriodStats, Plan, TLSBackend
from backends import pruning
from backends.scan_jobs import shift_counts
from transitleastsquares import core_fused as tls_fused

# indices into a period's counter row (names in backends.pruning.COUNTERS; the
# host adds shifts and brute force's multiply-adds)
DEPTH_PASS, COARSE_PASS, FINE_PASS, SEED_DOTS, EXACT_MACS, VIOLATIONS = 1, 2, 3, 4, 5, 7


@numba.njit(cache=True)
def phase_order(t, period, walk, phase, order, count):
    """``order`` := the samples in stable phase order at epoch 0 (numpy's
    mergesort order of the phases): transitleastsquares' three-gap walk for a
    regular cadence at periods from its crossover ``walk[5]`` on, else its
    bucket sort (both repair their proposal by insertion into the exact stable
    order). ``phase`` (n) and ``count`` (n + 1) are scratch."""
    # phase rounded as TLS's fastmath foldfast: x = t * (1 / period), phase =
    # x - floor(x); samples whose phases tie mathematically (e.g. at P = span / 2)
    # then sort in TLS's order
    inverse = 1.0 / period
    for i in range(t.size):
        x = t[i] * inverse
        phase[i] = x - np.floor(x)
    if period >= walk[5]:
        budget = int(tls_fused.WALK_SEARCH_WORK * t.size)
        if tls_fused.fold_walk_into(period, phase, walk, count, order, budget) >= 0:
            return
    tls_fused.fold_order_into(t, period, phase, count, order, phase[:0], True)  # keys: unused


def cadence_walk(t) -> tuple:
    """The walk argument of ``phase_order`` for the time stamps ``t``: their
    regular grid and crossover period, as TLS's fused backend finds them (over
    its default period range), or one that never walks."""
    grid = tls_fused.regular_grid(t, np.int64)
    if grid is None:
        return tls_fused.walk_disabled(np.int64)
    span = float(t.max() - t.min())
    return grid + (tls_fused.regular_grid_crossover(t, grid, span, np.int64),)


def fold_sort_period(t, y, w, period, maxwidth):
    """Flux and weights in stable phase order plus the wrap-around patch (the
    first ``maxwidth`` samples again), without the walk: a reference fold."""
    n = t.size
    order = np.empty(n, np.int64)
    phase_order(t, period, tls_fused.walk_disabled(np.int64), np.empty(n), order,
                np.empty(n + 1, np.int64))
    patched = order[np.arange(n + maxwidth) % n]
    return y[patched], w[patched]


@numba.njit(fastmath=True, cache=True, inline="always")
def exact_gain(aa, rw, fw, i, k, a2_uniform):
    """The gain 2 k AR - k^2 A2 of the shift at ``i``, evaluated in full
    (A2 = ``a2_uniform`` when the weights are uniform, > 0). Unsigned
    indices: no negative-index wrap-around, so the dot products vectorise."""
    base = np.uint64(i)
    ar = 0.0
    if a2_uniform > 0.0:
        for j in range(aa.size):
            ar += aa[j] * rw[base + np.uint64(j)]
        return 2.0 * k * ar - k * k * a2_uniform
    a2 = 0.0
    for j in range(aa.size):
        at = base + np.uint64(j)
        ar += aa[j] * rw[at]
        a2 += aa[j] * aa[j] * fw[at]
    return 2.0 * k * ar - k * k * a2


@numba.njit(fastmath=True, cache=True, inline="always")
def four_dots(aa, x, b0, b1, b2, b3, squared):
    """sum_j aa_j x_{b+j} (aa_j^2 when ``squared``) at four offsets b, the
    template read once for the four."""
    r0, r1, r2, r3 = 0.0, 0.0, 0.0, 0.0
    b0, b1, b2, b3 = np.uint64(b0), np.uint64(b1), np.uint64(b2), np.uint64(b3)
    for j in range(aa.size):
        aj = aa[j] * aa[j] if squared else aa[j]
        at = np.uint64(j)
        r0 += aj * x[b0 + at]
        r1 += aj * x[b1 + at]
        r2 += aj * x[b2 + at]
        r3 += aj * x[b3 + at]
    return r0, r1, r2, r3


@numba.njit(fastmath=True, cache=True)
def exact_gains(out, shifts, ks, count, aa, rw, fw, a2_uniform):
    """``exact_gain`` of ``count`` shifts with their k, four at a time."""
    q = 0
    while q + 4 <= count:
        i0, i1, i2, i3 = shifts[q], shifts[q + 1], shifts[q + 2], shifts[q + 3]
        ar = four_dots(aa, rw, i0, i1, i2, i3, False)
        a2 = ((a2_uniform, a2_uniform, a2_uniform, a2_uniform) if a2_uniform > 0.0
              else four_dots(aa, fw, i0, i1, i2, i3, True))
        for r in range(4):
            k = ks[q + r]
            out[q + r] = 2.0 * k * ar[r] - k * k * a2[r]
        q += 4
    for r in range(q, count):
        out[r] = exact_gain(aa, rw, fw, shifts[r], ks[r], a2_uniform)


@numba.njit(cache=True, error_model="numpy")
def gather_at(out, shifts, count, bounds, n_bounds, p):
    """``out[b, q] = p[shifts[q] + bounds[b]]`` for the first ``n_bounds``
    boundaries: the prefix sums a block of shifts reads, gathered once (adjacent
    pieces share a boundary), so that the sums over them vectorise."""
    for b in range(n_bounds):
        offset, row = bounds[b], out[b]
        for q in range(count):
            row[q] = p[np.uint64(shifts[q] + offset)]


@numba.njit(cache=True, error_model="numpy")
def piece_sums(out_mean, out_var, count, inv_n, c, n_pieces, g1, g2):
    """Per shift q of a block: sum_p c_p S_p and sum_p (Q_p - S_p^2 / n_p),
    S_p and Q_p the differences of the prefix sums ``g1``, ``g2`` gathered at
    the piece boundaries (A2's lower bound: c = piece means of a^2, sums of
    the weights)."""
    out_mean[:count] = 0.0
    out_var[:count] = 0.0
    for p in range(n_pieces):
        lo, hi, cp = g1[p], g1[p + 1], c[p]
        for q in range(count):
            out_mean[q] += cp * (hi[q] - lo[q])
        lo2, hi2, ip = g2[p], g2[p + 1], inv_n[p]
        for q in range(count):
            s = hi[q] - lo[q]
            out_var[q] += (hi2[q] - lo2[q]) - s * s * ip


@numba.njit(cache=True, error_model="numpy")
def line_sums(out, shifts, count, c, slope, centre, n_pieces, gu, gj, origin):
    """Per shift i of a block: sum_p (c_p S_p + slope_p M_p), the correlation of
    u with the template's K-piece linear approximation; S_p = sum of u over
    piece p, M_p = sum over it of (j - centre_p) u_{i+j}, from the prefix sums
    of u (``gu``) and of (t - origin) u (``gj``) gathered at the boundaries."""
    out[:count] = 0.0
    for p in range(n_pieces):
        lo, hi, lo_j, hi_j = gu[p], gu[p + 1], gj[p], gj[p + 1]
        cp, sp, offset = c[p], slope[p], centre[p] - origin
        for q in range(count):
            s = hi[q] - lo[q]
            out[q] += cp * s + sp * ((hi_j[q] - lo_j[q]) - (shifts[q] + offset) * s)


@numba.njit(cache=True, error_model="numpy")
def detrended_squares(out, shifts, count, length, u, u_end, j, j_end, q, q_end, origin):
    """Per shift i of a block: the sum of squares of u over the window [i, i +
    length) left after its least-squares line, Q - S^2 / L - M^2 / T
    (M = sum (j - jbar) u_{i+j}, T = sum (j - jbar)^2), from the prefix sums
    of u, (t - origin) u and u^2 gathered at both ends."""
    offset = 0.5 * (length - 1) - origin
    inv_len, inv_t = 1.0 / length, 12.0 / (length * (length * length - 1.0))
    for k in range(count):
        s = u_end[k] - u[k]
        moment = (j_end[k] - j[k]) - (shifts[k] + offset) * s
        out[k] = (q_end[k] - q[k]) - s * s * inv_len - moment * moment * inv_t


@numba.njit(cache=True)
def fine_terms(ar, var, a2, var_w, shifts, count, length, uniform, line_pieces, line_bounds,
               line_c, line_slope, line_centre, n_pieces, bounds, inv_n, c2, pu, pu2, pj, pw, pw2,
               origin, gathered):
    """The K-piece bounds' sums for a block of shifts: AR's linear ones into
    ``ar`` and ``var`` (detrended squares), A2's constant ones into ``a2`` and
    ``var_w`` unless ``uniform``. ``gathered``: (2 K + 4) x GATHER scratch."""
    k = line_pieces
    gu, gj = gathered[:k + 1], gathered[k + 1:2 * k + 2]
    gather_at(gu, shifts, count, line_bounds, k + 1, pu)
    gather_at(gj, shifts, count, line_bounds, k + 1, pj)
    line_sums(ar, shifts, count, line_c, line_slope, line_centre, k, gu, gj, origin)
    gq = gathered[2 * k + 2:2 * k + 4]
    gather_at(gq, shifts, count, line_bounds[0:k + 1:k], 2, pu2)  # the window's ends
    detrended_squares(var, shifts, count, length, gu[0], gu[k], gj[0], gj[k], gq[0], gq[1], origin)
    if not uniform:
        g1, g2 = gathered[:n_pieces + 1], gathered[n_pieces + 1:2 * n_pieces + 2]
        gather_at(g1, shifts, count, bounds, n_pieces + 1, pw)
        gather_at(g2, shifts, count, bounds, n_pieces + 1, pw2)
        piece_sums(a2, var_w, count, inv_n, c2, n_pieces, g1, g2)


@numba.njit(cache=True)
def line_allowances(g, m, u1, u2, length, c, slope, defects, dots_ar):
    """The linear bound's rounding allowances, doubled (``backends.pruning``):
    (on AR's mean terms, inside the square root); its data moments are off by
    at most 3 g M U1."""
    t = length * (length * length - 1.0) / 12.0
    gm = g * m
    on_mean = (np.sum(np.abs(c)) * 4.0 * g * u1 + np.sum(np.abs(slope)) * 4.0 * gm * u1
               + defects[0] * u1 / length + defects[1] * np.sqrt(u2 / t) + dots_ar)
    on_squares = (4.0 * g * u2 + 7.0 * g * u1 * u1 + 6.0 * gm * u1 * np.sqrt(u2 / t)
                  + 9.0 * (gm * u1) ** 2 / t)
    return 2.0 * on_mean, 2.0 * on_squares


GATHER = 256  # shifts per block: window sums are gathered, then bounded vectorised


@numba.njit(cache=True, error_model="numpy")
def window_sums(out, first, count, stride, length, p):
    """``out[q] = p[i + length] - p[i]``, i = (first + q) stride: a strided
    window sum per shift, gathered into contiguous memory."""
    ul = np.uint64(length)
    for q in range(count):
        i = np.uint64((first + q) * stride)
        out[q] = p[i + ul] - p[i]


@numba.njit(cache=True, error_model="numpy")
def listed_window_sums(out, shifts, count, length, p):
    """``out[q] = p[shifts[q] + length] - p[shifts[q]]``, gathered."""
    ul = np.uint64(length)
    for q in range(count):
        i = np.uint64(shifts[q])
        out[q] = p[i + ul] - p[i]


@numba.njit(cache=True, error_model="numpy")
def depth_pass(shifts, boxes, n_shifts, stride, d, cs, depth_min, block):
    """List the shifts of one width whose box depth exceeds ``depth_min`` in
    ``shifts`` with their box depths in ``boxes``; returns (how many, the
    deepest box, its shift or -1), TLS's first maximum. ``block`` (GATHER) is
    scratch."""
    listed, deepest, at = 0, depth_min, -1
    for first in range(0, n_shifts, GATHER):
        count = min(GATHER, n_shifts - first)
        window_sums(block, first, count, stride, d, cs)
        for q in range(count):
            block[q] = 1.0 - block[q] / d
        for q in range(count):  # branch-free compaction
            box = block[q]
            shifts[listed] = (first + q) * stride
            boxes[listed] = box
            listed += box > depth_min
            if box > deepest:
                deepest, at = box, (first + q) * stride
    return listed, deepest, at


@numba.njit(cache=True)
def const_a2_floor(w_least, sum_a2, length, e_a21):
    """A2 = sum_q a_q^2 W_(i+q) >= w_least sum a^2 at every shift: sum a^2
    (``length`` positive terms) and the product are within (L + 2) eps
    relative, covered by (L + 4) eps; less e_a21, which holds twice the exact
    evaluation's error g amax^2 W1 (backends.pruning); at least 0."""
    return max(w_least * sum_a2 * (1.0 - (length + 4) * 2.0 ** -52) - e_a21, 0.0)


@numba.njit(cache=True, error_model="numpy")
def coarse_bounds(bound, sums, shifts, boxes, count, length, pu, pu2, pw, pw2, kscale, c1, r1,
                  c12, r12, a2_uniform, a2_least, e_ar, e_v, e_a2, e_vw, pad, depth_least):
    """The one-piece gain bound (with its pad: tuning's COARSE_PAD) of ``count``
    listed shifts with their box depths into ``bound`` (inf where k <= 0 or
    the box is shallower than ``depth_least``, tuning's COARSE_DEPTH: no bound); A2's floor
    with weights that differ is at least ``a2_least``. The window
    sums are gathered into ``sums`` (4 x GATHER) first, then bounded
    branch-free, so that numba vectorises it."""
    uniform = a2_uniform > 0.0
    listed_window_sums(sums[0], shifts, count, length, pu)
    listed_window_sums(sums[1], shifts, count, length, pu2)
    if not uniform:
        listed_window_sums(sums[2], shifts, count, length, pw)
        listed_window_sums(sums[3], shifts, count, length, pw2)
    w1 = 0 if uniform else 2  # uniform weights: A2 is a2_uniform exactly, no weight sums
    inv_len = 1.0 / length
    for q in range(count):
        k = boxes[q] * kscale
        s = sums[0, q]
        v = sums[1, q] - s * s * inv_len
        ub_ar = c1 * s + r1 * np.sqrt(max(v + e_v, 0.0)) + e_ar
        sw = sums[w1, q]
        vw = sums[w1 + 1, q] - sw * sw * inv_len
        lb_a2 = a2_uniform if uniform else max(c12 * sw - r12 * np.sqrt(max(vw + e_vw, 0.0)) - e_a2, a2_least)
        ub = 2.0 * k * ub_ar - k * k * lb_a2 + pad * (2.0 * k * abs(ub_ar) + k * k * lb_a2)
        bound[q] = ub if k > 0.0 and boxes[q] >= depth_least else np.inf


@numba.njit(cache=True, error_model="numpy")
def gather_fold(out, x, order):
    """``out[j] = x[order[j mod N]]``: ``x`` in phase order, patched."""
    n = order.size
    for j in range(n):
        out[j] = x[order[j]]
    for j in range(n, out.size):
        out[j] = out[j - n]


@numba.njit(cache=True, error_model="numpy")
def prefix_sums(y, w, order, w_uniform, f, fw, cs, rw, pu, pu2, pj, pw, pw2):
    """The fold in phase ``order``, patched (M = len(rw) samples, index j is
    sample order[j mod N]): the flux ``f`` and weights ``fw`` (unless
    uniform), cumulative flux, u = (1 - f) w (the dot products' data) and
    prefix sums of u, u^2, (j - M / 2) u (and w, w^2 unless uniform), each of
    length M + 1; returns sum |u|."""
    m = rw.size
    uniform = w_uniform > 0.0
    gather_fold(f, y, order)
    if not uniform:
        gather_fold(fw, w, order)
    origin = 0.5 * m
    cs[0] = pu[0] = pu2[0] = pj[0] = pw[0] = pw2[0] = 0.0
    u1 = s_f = s_u = s_u2 = s_j = s_w = s_w2 = 0.0
    for j in range(m):
        wj = w_uniform if uniform else fw[j]
        u = (1.0 - f[j]) * wj
        u1 += abs(u)
        rw[j] = u
        s_f += f[j]
        s_u += u
        s_u2 += u * u
        s_j += (j - origin) * u
        cs[j + 1], pu[j + 1], pu2[j + 1], pj[j + 1] = s_f, s_u, s_u2, s_j
        if not uniform:
            s_w += wj
            s_w2 += wj * wj
            pw[j + 1], pw2[j + 1] = s_w, s_w2
    return u1


@numba.njit(cache=True)
def shift_end(m, n, d, stride):
    """End of the shift range of width ``d``: shifts at and past n repeat
    shifts below n when the stride is 1 (TLS's fused skips them too)."""
    end = m - d + 1
    return min(end, n) if stride == 1 else end


@numba.njit(cache=True)
def scan_period(y, w, order, lo, hi, widths, strides, offsets, a, overshoot, depth_min,
                signal_depth, w_uniform, w_least, n_pieces, bounds, inv_n, c2, rho, rho2, mean, sum_a2,
                amax, lines, tuning, debug, count, work, queue, listed, listed_box, starts, block,
                gathered):
    """Best (gain, width index or -1, depth) over the allowed widths of one
    period (flux ``y``, weights ``w`` in phase ``order``, the least
    ``w_least``), by the pruning cascade; adds its work to ``count``. ``lines``: the linear bound's tables
    (``PieceTables.line_*``). Scratch: ``work`` (16 x (M + 1)),
    ``queue`` (M + 1), ``listed`` and ``listed_box`` (the period's shifts),
    ``starts`` (widths + 1), ``block`` (5 x GATHER), ``gathered`` ((2 K + 4) x
    GATHER, K the most pieces of either K-piece bound)."""
    n, m = order.size, work.shape[1] - 1
    uniform = w_uniform > 0.0
    cs, rw, fw, pu, pu2, pj = work[0], work[1, :m], work[2, :m], work[3], work[4], work[5]
    pw, pw2, flux = work[6], work[7], work[15, :m]
    u1 = prefix_sums(y, w, order, w_uniform, flux, fw, cs, rw, pu, pu2, pj, pw, pw2)
    u2 = pu2[m]
    w1 = w_uniform * m if uniform else pw[m]
    w2 = w_uniform * w_uniform * m if uniform else pw2[m]
    g, pad, prune_min, fine_min, coarse_pad, coarse_depth = tuning
    e_v = 2.0 * (4.0 * g * u2 + 7.0 * g * u1 * u1)
    e_vw = 2.0 * (4.0 * g * w2 + 7.0 * g * w1 * w1)
    fine_ar, fine_var, fine_a2, fine_varw = work[8], work[9], work[10], work[11]
    qbox, ks, gains = work[12], work[13], work[14]
    line_pieces, line_bounds, line_c, line_slope, line_centre, line_rho, line_defects = lines
    sums, bound = block[:4], block[4]

    # depth filter: each width's shifts with a box deeper than depth_min, listed
    # with their box depths; seed: the exact gain at each width's deepest box
    threshold = 0.0
    starts[0] = 0
    for wi in range(lo, hi):
        d, stride = widths[wi], strides[wi]
        n_shifts = (shift_end(m, n, d, stride) - 1) // stride + 1
        first = starts[wi - lo]
        passed, deepest, at = depth_pass(listed[first:], listed_box[first:], n_shifts, stride, d,
                                         cs, depth_min, bound)
        starts[wi - lo + 1] = first + passed
        if at >= 0:
            aa = a[offsets[wi]:offsets[wi + 1]]
            k = deepest * (overshoot[wi] / signal_depth)
            threshold = max(threshold, exact_gain(aa, rw, fw, at, k, w_uniform * sum_a2[wi]))
            count[SEED_DOTS] += 1
            count[EXACT_MACS] += aa.size
    count[DEPTH_PASS] += starts[hi - lo]
    floor = threshold - pad * threshold

    best_gain, best_index, best_depth = 0.0, -1, 0.0
    for wi in range(lo, hi):
        aa = a[offsets[wi]:offsets[wi + 1]]
        length = aa.size
        kscale = overshoot[wi] / signal_depth
        a2u = w_uniform * sum_a2[wi]
        c1, c12, r1, r12 = mean[wi, 0], mean[wi, 1], rho[wi, 0], rho2[wi, 0]
        # short templates: the exact dot product costs less than a bound
        direct = length < prune_min
        fine = length >= fine_min
        # rounding allowances of this (period, width), doubled (backends.pruning)
        dots_ar = g * amax[wi] * u1
        dots_a2 = 0.0 if uniform else g * amax[wi] * amax[wi] * w1
        e_ar1 = 2.0 * (c1 * 4.0 * g * u1 + dots_ar)
        e_a21 = 2.0 * (c12 * 4.0 * g * w1 + dots_a2)
        e_a2k = 2.0 * (np.sum(c2[wi]) * 4.0 * g * w1 + dots_a2)
        a2c = 0.0 if uniform else const_a2_floor(w_least, sum_a2[wi], length, e_a21)
        # coarse stage (one piece) per block of listed shifts, survivors queued
        # in TLS's order with their box depths (branch-free compaction)
        queued = 0
        for first in range(starts[wi - lo], starts[wi - lo + 1], GATHER):
            size = min(GATHER, starts[wi - lo + 1] - first)
            shifts, boxes = listed[first:first + size], listed_box[first:first + size]
            if direct:
                bound[:size] = np.inf
            else:
                coarse_bounds(bound, sums, shifts, boxes, size, length, pu, pu2, pw, pw2, kscale,
                              c1, r1, c12, r12, a2u, a2c, e_ar1, e_v, e_a21, e_vw, coarse_pad, coarse_depth)
            for q in range(size):
                queue[queued] = shifts[q]
                qbox[queued] = boxes[q]
                queued += bound[q] >= floor
            if debug:
                for q in range(size):
                    if bound[q] < floor:
                        gain = exact_gain(aa, rw, fw, shifts[q], boxes[q] * kscale, a2u)
                        if gain > bound[q] or gain >= threshold:
                            count[VIOLATIONS] += 1
        count[COARSE_PASS] += queued
        # fine stage (K linear pieces of a, K constant pieces of a^2) on the
        # queue, then the exact gain of the survivors
        if fine:
            e_arl, e_vl = line_allowances(g, m, u1, u2, length, line_c[wi], line_slope[wi],
                                          line_defects[wi], dots_ar)
            for first in range(0, queued, GATHER):
                size = min(GATHER, queued - first)
                fine_terms(fine_ar[first:], fine_var[first:], fine_a2[first:], fine_varw[first:],
                           queue[first:first + size], size, length, uniform, line_pieces[wi],
                           line_bounds[wi], line_c[wi], line_slope[wi], line_centre[wi],
                           n_pieces[wi], bounds[wi], inv_n[wi], c2[wi], pu, pu2, pj, pw, pw2,
                           0.5 * m, gathered)
        survivors = 0
        for q in range(queued):
            i, box = queue[q], qbox[q]
            k = box * kscale
            if k > 0.0 and fine:
                ub_ar = fine_ar[q] + line_rho[wi] * np.sqrt(max(fine_var[q] + e_vl, 0.0)) + e_arl
                lb_a2 = a2u
                if not uniform:
                    lb_a2 = max(fine_a2[q] - rho2[wi, 1]
                                * np.sqrt(max(fine_varw[q] + n_pieces[wi] * e_vw, 0.0)) - e_a2k, a2c)
                ub = 2.0 * k * ub_ar - k * k * lb_a2 + pad * (2.0 * k * abs(ub_ar) + k * k * lb_a2)
                if ub < floor:
                    if debug:
                        gain = exact_gain(aa, rw, fw, i, k, a2u)
                        if gain > ub or gain >= threshold:
                            count[VIOLATIONS] += 1
                    continue
            queue[survivors] = i
            qbox[survivors] = box
            ks[survivors] = k
            survivors += 1
        count[FINE_PASS] += survivors
        count[EXACT_MACS] += survivors * length
        exact_gains(gains, queue, ks, survivors, aa, rw, fw, a2u)
        for q in range(survivors):
            if gains[q] > best_gain:
                best_gain, best_index, best_depth = gains[q], wi, 1.0 - qbox[q] * overshoot[wi]
    return best_gain, best_index, best_depth


@intrinsic
def claim(typingctx, counter):
    """Atomically ``counter[0] += 1``; returns the value before (a shared work counter)."""
    def codegen(context, builder, signature, args):
        ary = context.make_array(signature.args[0])(context, builder, args[0])
        at = cgutils.get_item_pointer(context, builder, signature.args[0], ary,
                                      [context.get_constant(types.intp, 0)])
        return builder.atomic_rmw("add", at, context.get_constant(types.int64, 1), "monotonic")
    return types.int64(counter), codegen


@numba.njit(parallel=True, cache=True)
def search_periods(t, y, w, periods, lo, hi, widths, strides, offsets, a, overshoot,
                   maxwidth, depth_min, signal_depth, w_uniform, w_least, n_pieces, bounds, inv_n, c2,
                   rho, rho2, mean, sum_a2, amax, lines, tuning, debug, threads, walk, listed_max):
    n_periods = periods.size
    gain = np.zeros(n_periods)
    index = np.full(n_periods, -1, np.int64)
    depth = np.zeros(n_periods)
    counts = np.zeros((n_periods, 8), np.int64)
    # one worker per thread, each with its scratch (large arrays are fresh pages
    # each time: once per worker, not per period), claims the next period when
    # done with one: an even load whatever the periods cost or the other
    # processes on the machine take
    next_period = np.zeros(1, np.int64)
    n, m = t.size, t.size + maxwidth
    for _ in numba.prange(min(threads, n_periods)):
        work = np.empty((16, m + 1))
        queue = np.empty(m + 1, np.int64)
        listed = np.empty(listed_max, np.int64)
        listed_box = np.empty(listed_max)
        starts = np.empty(widths.size + 1, np.int64)
        block = np.empty((5, GATHER))
        gathered = np.empty((2 * max(bounds.shape[1], lines[1].shape[1]) + 2, GATHER))
        order = np.empty(n, np.int64)
        while True:
            p = claim(next_period)
            if p >= n_periods:
                break
            phase_order(t, periods[p], walk, work[0, :n], order, queue[:n + 1])
            gain[p], index[p], depth[p] = scan_period(
                y, w, order, lo[p], hi[p], widths, strides, offsets, a, overshoot, depth_min,
                signal_depth, w_uniform, w_least, n_pieces, bounds, inv_n, c2, rho, rho2, mean, sum_a2,
                amax, lines, tuning, debug, counts[p], work, queue, listed, listed_box, starts,
                block, gathered)
    return gain, index, depth, counts.sum(axis=0)


def max_listed(plan, lo, hi) -> int:
    """The most shifts one period of the batch visits (over its widths)."""
    tp = plan.templates
    per_width = shift_counts(tp.widths, tp.strides, tp.maxwidth + plan.lc.size, plan.lc.size)
    total = np.concatenate([[0], np.cumsum(per_width)])
    return int(np.max(total[hi] - total[lo], initial=0))


@dataclass(frozen=True)
class CPUState:
    """What ``upload`` prepares once per search: the plan and the walk argument
    of ``phase_order`` for its time stamps."""

    plan: Plan
    walk: tuple


class CPUBackend(TLSBackend):
    """Exact TLS statistic with numba, parallel over periods (all CPU cores),
    pruned by certified bounds. ``debug=True`` also evaluates every skipped
    shift and raises ``BoundViolation`` if one beat its bound."""

    name = "cpu"
    summary = "exact reference: numba on the CPU, parallel over periods, certified pruning"
    fuses_fold_sort = True  # each thread folds, sorts and scans its own period

    def __init__(self, debug: bool = False):
        super().__init__()
        self.debug = bool(debug)

    def upload(self, plan):
        return CPUState(plan, cadence_walk(plan.lc.t))

    def fold_sort(self, state, periods):
        """Folded, sorted, patched (flux, weight) per period (for stage timing)."""
        lc, m = state.plan.lc, state.plan.templates.maxwidth
        return [fold_sort_period(lc.t, lc.y, lc.w, p, m) for p in periods]

    def chi2_scan(self, state, folded, periods, lo, hi):
        plan = state.plan
        tp, pc = plan.templates, plan.templates.pieces
        gain, index, depth, counts = search_periods(
            plan.lc.t, plan.lc.y, plan.lc.w, periods, lo, hi, tp.widths, tp.strides,
            tp.offsets, tp.a, tp.overshoot, tp.maxwidth, tp.depth_min, tp.signal_depth,
            plan.lc.uniform_weight, plan.lc.least_weight, pc.n_pieces, pc.bounds, pc.inv_n, pc.c2, pc.rho, pc.rho2,
            pc.mean, pc.sum_a2, pc.amax, (pc.line_pieces, pc.line_bounds, pc.line_c, pc.line_slope,
            pc.line_centre, pc.line_rho, pc.line_defects),
            pruning.tuning(tp.maxwidth + plan.lc.size), self.debug,
            numba.get_num_threads(),  # an argument: called inside, it stops numba caching the function
            state.walk, max_listed(plan, lo, hi),
        )
        pruning.add_work(self.work, counts, pruning.host_work(plan, lo, hi), self.debug)
        return PeriodStats.from_gains(plan, gain, index, depth)

    def max_batch_periods(self, plan):
        # progress-bar granularity and Ctrl-C latency (one numba call per batch),
        # against each thread's idle wait for the batch's last period
        return 32 * max(8, numba.get_num_threads())
