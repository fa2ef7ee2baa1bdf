"""``cpu``: the exact reference backend, numba on the CPU, parallel over periods.

It computes TLS 2.0.4's exact statistic (``core.search_period``): per period
fold at epoch 0, stable sort by phase, append the first ``maxwidth`` samples
(wrap-around patch), and for every allowed template width and every stride-th
shift whose box depth exceeds ``depth_min`` score the template scaled to
depth = box depth x overshoot. The chi2 of a shift is written as the flat
chi2 minus a gain,

    chi2_i = chi2_flat - (2 k AR_i - k^2 A2_i),
    AR_i = sum_j a_j r_{i+j} w_{i+j},  A2_i = sum_j a_j^2 w_{i+j},  r = 1 - flux,

which equals TLS's in-transit + out-of-transit - edge-correction sum exactly
(the out-of-transit and edge terms cancel to the flat chi2), so the best fit
of a period is the shift with the largest positive gain, ties to the first.
"""

from __future__ import annotations

import numba
import numpy as np

from backends.protocol import PeriodStats, TLSBackend


@numba.njit(cache=True)
def fold(t, period):
    """Phase at epoch 0, rounded exactly as TLS's fastmath ``foldfast``:
    x = t * (1 / period), phase = x - floor(x). Samples whose phases tie
    mathematically (e.g. at P = span / 2) then sort in TLS's order."""
    x = t * (1.0 / period)
    return x - np.floor(x)


@numba.njit(cache=True)
def fold_sort_period(t, y, w, period, maxwidth):
    """Fold at epoch 0, stable-sort by phase, append the wrap-around patch."""
    phase = fold(t, period)
    order = np.argsort(phase, kind="mergesort")
    n = t.size
    f = np.empty(n + maxwidth)
    fw = np.empty(n + maxwidth)
    for k in range(n + maxwidth):
        src = order[k % n]
        f[k] = y[src]
        fw[k] = w[src]
    return f, fw


@numba.njit(fastmath=True, cache=True)
def scan_period(f, fw, lo, hi, widths, strides, offsets, a, overshoot, depth_min, signal_depth):
    """Best (gain, width index or -1, depth) over the allowed widths of one period."""
    m = f.size
    csum = np.empty(m + 1)  # running box means as TLS forms them (cumsum of flux)
    csum[0] = 0.0
    for k in range(m):
        csum[k + 1] = csum[k] + f[k]
    rw = (1.0 - f) * fw
    best_gain, best_index, best_depth = 0.0, -1, 0.0
    for wi in range(lo, hi):
        d = widths[wi]
        # contiguous slices: numba vectorises the dot products only in this form
        aa = a[offsets[wi]:offsets[wi + 1]]
        qq = aa * aa
        length = aa.size
        for i in range(0, m - d + 1, strides[wi]):
            box = 1.0 - (csum[i + d] - csum[i]) / d
            if box > depth_min:
                depth = box * overshoot[wi]
                k = depth / signal_depth
                x = rw[i:i + length]
                z = fw[i:i + length]
                ar = 0.0
                a2 = 0.0
                for j in range(length):
                    ar += aa[j] * x[j]
                    a2 += qq[j] * z[j]
                gain = 2.0 * k * ar - k * k * a2
                if gain > best_gain:
                    best_gain, best_index, best_depth = gain, wi, 1.0 - depth
    return best_gain, best_index, best_depth


@numba.njit(parallel=True, cache=True)
def search_periods(t, y, w, periods, lo, hi, widths, strides, offsets, a, overshoot,
                   maxwidth, depth_min, signal_depth):
    n_periods = periods.size
    gain = np.zeros(n_periods)
    index = np.full(n_periods, -1, np.int64)
    depth = np.zeros(n_periods)
    for p in numba.prange(n_periods):
        f, fw = fold_sort_period(t, y, w, periods[p], maxwidth)
        gain[p], index[p], depth[p] = scan_period(
            f, fw, lo[p], hi[p], widths, strides, offsets, a, overshoot, depth_min, signal_depth
        )
    return gain, index, depth


def period_stats(plan, gain, index, depth) -> PeriodStats:
    """PeriodStats from per-period (gain, width index or -1, depth) arrays."""
    index = np.asarray(index)
    rows = np.where(index >= 0, plan.templates.rows[np.maximum(index, 0)], 0)
    return PeriodStats(
        chi2=plan.lc.chi2_flat - np.asarray(gain, np.float64),
        rows=rows.astype(np.int64),
        depths=np.asarray(depth, np.float64),
    )


class CPUBackend(TLSBackend):
    """Exact TLS statistic with numba, parallel over periods (all CPU cores)."""

    name = "cpu"
    summary = "exact reference: numba on the CPU, parallel over periods"
    fuses_fold_sort = True  # each thread folds, sorts and scans its own period

    def fold_sort(self, plan, periods):
        """Folded, sorted, patched (flux, weight) per period (for stage timing)."""
        m = plan.templates.maxwidth
        return [fold_sort_period(plan.lc.t, plan.lc.y, plan.lc.w, p, m) for p in periods]

    def chi2_scan(self, plan, folded, periods, lo, hi):
        tp = plan.templates
        gain, index, depth = search_periods(
            plan.lc.t, plan.lc.y, plan.lc.w, periods, lo, hi, tp.widths, tp.strides,
            tp.offsets, tp.a, tp.overshoot, tp.maxwidth, tp.depth_min, tp.signal_depth,
        )
        return period_stats(plan, gain, index, depth)

    def max_batch_periods(self, plan):
        return 2048  # progress-bar granularity
