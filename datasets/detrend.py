"""Flattening and binning of light curves before a TLS search.

TLS's model is a flat, normalised light curve; raw (systematics-corrected but
not flattened) K2/TESS fluxes still carry stellar variability, so they are
divided by a running median whose window is a few times the longest transit
(as TLS's own tutorials do). The median runs over cadences within each
contiguous segment (split at gaps), so it never bridges a data gap; near a
segment's edge the window is cut short rather than padded with a constant.
"""

from __future__ import annotations

import numpy as np


def segments(t, max_gap):
    """(start, stop) index pairs of the runs of ``t`` without a gap > ``max_gap``."""
    breaks = np.flatnonzero(np.diff(t) > max_gap) + 1
    edges = np.concatenate(([0], breaks, [t.size]))
    return list(zip(edges[:-1], edges[1:]))


def trend(t, y, window):
    """Running-median trend of ``y`` over ``window`` days (odd number of cadences)."""
    from transitleastsquares.helpers import running_median

    t = np.asarray(t, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if window <= 0:
        raise ValueError(f"window must be positive, got {window}")
    cadence = float(np.median(np.diff(t)))
    out = np.empty_like(y)
    for start, stop in segments(t, max_gap=max(window / 2, 5 * cadence)):
        n = stop - start
        kernel = min(int(round(window / cadence)), n)
        kernel -= 1 - kernel % 2  # odd, so the median is one of the samples
        kernel = max(kernel, 1)
        seg = np.ascontiguousarray(y[start:stop])
        med = running_median(seg, kernel)
        half = kernel // 2
        for i in range(min(half, n)):  # near an edge: the median of the samples there are
            med[i] = np.median(seg[: i + half + 1])
            med[n - 1 - i] = np.median(seg[n - 1 - i - half:])
        out[start:stop] = med
    return out


def flatten(t, y, dy=None, window=0.75):
    """(y / trend, dy / trend): the light curve divided by its running median."""
    tr = trend(t, y, window)
    return y / tr, None if dy is None else np.asarray(dy, dtype=np.float64) / tr


def robust_sigma(y):
    """Standard deviation of ``y`` from its median absolute deviation (outliers barely count)."""
    return float(1.4826 * np.median(np.abs(y - np.median(y))))


def bin_lightcurve(t, y, dy=None, width=10 / 1440):
    """Average into time bins of ``width`` days; empty bins are dropped.

    The binned error is the error of the mean (sqrt(sum dy^2) / n), or, without
    ``dy``, None. Returns (t, y, dy) with t the mean time of each bin.
    """
    t = np.asarray(t, dtype=np.float64)
    if width <= 0:
        raise ValueError(f"bin width must be positive, got {width}")
    index = np.floor((t - t.min()) / width).astype(np.int64)
    _, inverse, counts = np.unique(index, return_inverse=True, return_counts=True)

    def mean(values):
        return np.bincount(inverse, weights=values) / counts

    dy_binned = None
    if dy is not None:
        dy_binned = np.sqrt(np.bincount(inverse, weights=np.asarray(dy) ** 2)) / counts
    return mean(t), mean(np.asarray(y, dtype=np.float64)), dy_binned
