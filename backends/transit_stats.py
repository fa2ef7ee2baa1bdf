"""TLS's per-transit statistics (``stats.intransit_stats``, ``snr_stats`` and
``count_stats`` of TLS 2.0.4) of a time-sorted light curve, every transit at
once instead of one Python loop step each (80 steps for a K2 curve at
P = 1 d). The values are TLS's to the bit: the same points by the same
binary searches, and means and deviations summed in numpy's own order
(``numpy_sum``), since 1 - mean (a transit's depth) would magnify any other
rounding."""

from __future__ import annotations

import numba
import numpy as np
from transitleastsquares.stats import pink_noise

PAIRWISE_BLOCK = 128  # numpy's PW_BLOCKSIZE
COUNT_EDGES = np.array([-1.5, -0.5, 0.5, 1.5])  # count_stats' windows' edges, in durations from mid-transit


@numba.njit(cache=True, nogil=True)
def numpy_sum(a):
    """``numpy.sum`` of a contiguous float64 array, bit for bit: numpy's
    pairwise summation (eight accumulators in blocks of up to 128 values)."""
    n = a.size
    if n < 8:
        res = -0.0
        for i in range(n):
            res += a[i]
        return res
    if n <= PAIRWISE_BLOCK:
        r0, r1, r2, r3, r4, r5, r6, r7 = a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]
        i = 8
        while i < n - n % 8:
            r0 += a[i]
            r1 += a[i + 1]
            r2 += a[i + 2]
            r3 += a[i + 3]
            r4 += a[i + 4]
            r5 += a[i + 5]
            r6 += a[i + 6]
            r7 += a[i + 7]
            i += 8
        res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
        while i < n:
            res += a[i]
            i += 1
        return res
    half = n // 2
    half -= half % 8
    return numpy_sum(a[:half]) + numpy_sum(a[half:])


@numba.njit(cache=True, nogil=True)
def mean_and_std(a):
    """``numpy.mean`` and ``numpy.std`` of a contiguous float64 array, bit for
    bit, in one compiled call (NaN, without numpy's warning, where empty)."""
    if a.size == 0:
        return np.nan, np.nan
    mean = numpy_sum(a) / a.size
    deviation = a - mean
    return mean, np.sqrt(numpy_sum(deviation * deviation) / a.size)


@numba.njit(cache=True, nogil=True)
def _moments(y, lo, hi, means, stds):
    """numpy's mean and std of each segment y[lo:hi] (NaN where empty)."""
    for k in range(lo.size):
        means[k], stds[k] = mean_and_std(y[lo[k]:hi[k]])


def _window(t, lo, hi):
    """(index of the first point, number of points) with lo < t < hi (t
    sorted), as TLS's ``_between`` counts them."""
    first = np.searchsorted(t, lo, side="right")
    return first, np.maximum(0, np.searchsorted(t, hi, side="left") - first)


@numba.njit(cache=True, nogil=True)
def _gathered(y, lo, counts):
    """The points of the segments y[lo:lo + counts], concatenated in order."""
    out, start = np.empty(counts.sum()), 0
    for k in range(lo.size):
        out[start:start + counts[k]] = y[lo[k]:lo[k] + counts[k]]
        start += counts[k]
    return out


def intransit_stats(t, y, transit_times, duration):
    """TLS's ``intransit_stats`` (same tuple) for a time-sorted ``t``."""
    mids = np.asarray(transit_times, dtype=np.float64)
    tmin, tmax = mids - 0.5 * duration, mids + 0.5 * duration
    lo, counts = _window(t, tmin, tmax)
    counts[np.isnan(tmin) | np.isnan(tmax)] = 0
    depths, stds = np.empty(mids.size), np.empty(mids.size)
    _moments(y, lo, lo + counts, depths, stds)
    uncertainties = stds / np.sqrt(counts)
    # contiguous copies: a slice of one or no transit is contiguous and the rest are not, and each layout was a
    # numba compile of its own (~0.5 s in a survey's worker, at the first curve with few transits)
    odd = _gathered(y, np.ascontiguousarray(lo[1::2]), np.ascontiguousarray(counts[1::2]))
    even = _gathered(y, np.ascontiguousarray(lo[::2]), np.ascontiguousarray(counts[::2]))
    odd_mean, odd_std = _mean_and_error(odd)
    even_mean, even_std = _mean_and_error(even)
    return (odd_mean, even_mean, odd_std, even_std, odd, even, counts.astype(np.float64), depths,
            uncertainties)


def _mean_and_error(flux):
    if len(flux) == 0:
        return np.nan, np.nan
    mean, std = mean_and_std(flux)
    return mean, std / np.sum(len(flux)) ** (0.5)


@numba.njit(cache=True, nogil=True)
def out_of_transit(t, y, period, duration, T0):
    """``y[~helpers.transit_mask(t, period, duration, T0)]``: TLS's mask to the
    bit (numba's float ``%`` is numpy's: fmod, then the divisor's sign), in
    one pass without numpy's temporaries (~35 us of ~70 us, K2-like)."""
    keep = np.empty(t.size, np.bool_)
    for i in range(t.size):
        keep[i] = not (abs((t[i] - T0 + 0.5 * period) % period - 0.5 * period) < 0.5 * duration)
    return y[keep]


def snr_stats(flux_ootr, per_transit_count, transit_depths):
    """TLS's ``snr_stats`` (snr_per_transit, snr_pink_per_transit) from the
    flux out of transit (outside twice the duration) and ``intransit_stats``'
    counts and depths (the in-transit means it takes again)."""
    try:
        pinknoise = pink_noise(flux_ootr, int(per_transit_count.mean()))
    except Exception:  # as TLS: e.g. no in-transit points -> int(nan)
        pinknoise = np.nan
    std = mean_and_std(flux_ootr)[1]
    counts = per_transit_count.astype(np.int64)
    fit = (counts > 0) & (not np.isnan(std))
    root_n = np.array([n ** 0.5 for n in counts.tolist()])  # Python's power, as TLS's
    with np.errstate(divide="ignore", invalid="ignore"):
        snr = np.where(fit, (1 - transit_depths) / (std / root_n), 0.0)
        pink = np.where(fit, (1 - transit_depths) / pinknoise, 0.0)
    return snr, pink


def count_stats(t, transit_times, duration):
    """TLS's ``count_stats`` (in, after, before transit) for a time-sorted ``t``."""
    mids = np.asarray(transit_times, dtype=np.float64)
    inside = (mids - 1.5 * duration > t[0]) & (mids + 1.5 * duration < t[-1])
    edges = mids[inside] + COUNT_EDGES[:, None] * duration  # before, start, end, after (x - d is x + -d)
    counts = _window(t, edges[:-1], edges[1:])[1]
    before_count, in_count, after_count = counts.sum(axis=1).tolist()
    return in_count, after_count, before_count
