"""TLS's running median (``helpers.running_median``: odd kernel, no NaN, padded
to full length): the SDE detrend of a light curve's power spectrum.

Each array's values are ranked once; as the window slides, a
bitmap holds the ranks inside it and the median's rank moves to the next or
previous rank in the window, at most a step or two per slide. That is O(1)
per step, where TLS's sorted window shifts ~k/3 values, and the same values,
a median being one of the values. One compiled call per array: a chunk's
arrays joined into one call cost more than the calls (~250 us per K2
spectrum of 9,679 periods, k = 91, where it was ~470 us).

The ranks come from one sort of uint64 keys, not an argsort of the values:
each value's order-preserving bits with its index in the low bits, sorted
by numpy (a radix sort of them was slower on an H200 host and no faster on
another VM: reports/host_path/2026-12-01_H200); values whose truncated keys
tie are put in order afterwards.
"""

from __future__ import annotations

import numba
import numpy as np

ONE = np.uint64(1)
SIGN = np.uint64(1 << 63)
SHORT_RUN = 32  # tied keys sorted by insertion up to this many


@numba.njit(cache=True, nogil=True)
def _highest_bit(word):
    """Index of the highest set bit of a nonzero uint64."""
    index = 0
    for shift in (32, 16, 8, 4, 2, 1):
        if word >> np.uint64(shift):
            word >>= np.uint64(shift)
            index += shift
    return index


@numba.njit(cache=True, nogil=True)
def _next(bits, rank):
    """The smallest rank in ``bits`` above ``rank`` (one must be there)."""
    rank += 1
    w = rank >> 6
    word = bits[w] & (~np.uint64(0) << np.uint64(rank & 63))
    while word == 0:
        w += 1
        word = bits[w]
    return (w << 6) + _highest_bit(word & (~word + ONE))  # its lowest set bit


@numba.njit(cache=True, nogil=True)
def _previous(bits, rank):
    """The largest rank in ``bits`` below ``rank`` (one must be there)."""
    rank -= 1
    w = rank >> 6
    drop = np.uint64(63 - (rank & 63))
    word = (bits[w] << drop) >> drop
    while word == 0:
        w -= 1
        word = bits[w]
    return (w << 6) + _highest_bit(word)


@numba.njit(cache=True, nogil=True)
def _running_median(ordered, ranks, kernel, bits, out):
    """Median of every window of ``kernel`` values; ``ordered``: the values
    sorted, ``ranks``: each value's place in it; ``bits`` zeroed, one bit per rank."""
    half = kernel // 2
    for j in range(kernel):
        bits[ranks[j] >> 6] |= ONE << np.uint64(ranks[j] & 63)
    median = _next(bits, -1)
    for _ in range(half):
        median = _next(bits, median)
    out[0] = ordered[median]
    below = half  # ranks in the window under the median's
    for i in range(1, ranks.size - kernel + 1):
        old, new = ranks[i - 1], ranks[i + kernel - 1]
        bits[old >> 6] &= ~(ONE << np.uint64(old & 63))
        bits[new >> 6] |= ONE << np.uint64(new & 63)
        below += (new < median) - (old < median)
        if old == median:  # the median left: a neighbour in the window takes its place
            if below > half:
                median = _previous(bits, median)
                below -= 1
            else:
                median = _next(bits, median)
        while below > half:
            median = _previous(bits, median)
            below -= 1
        while below < half:
            median = _next(bits, median)
            below += 1
        out[i] = ordered[median]


@numba.njit(cache=True, nogil=True)
def _packed_keys(data, shift):
    """Each value's bits made to sort as the value does (non-negative: sign bit
    set; negative: all bits flipped), their low ``shift`` bits replaced by the
    value's index."""
    bits = data.view(np.uint64)
    out = np.empty(data.size, np.uint64)
    for i in range(data.size):
        key = ~bits[i] if bits[i] & SIGN else bits[i] | SIGN
        out[i] = (key >> shift << shift) | np.uint64(i)
    return out


@numba.njit(cache=True, nogil=True)
def _order_of(data, packed, shift):
    """The indices of ``packed`` (``_packed_keys`` sorted): ``data``'s argsort,
    where keys that tie without their low bits are ordered by value: in place
    by insertion for short runs (a spectrum of 100,000 periods has ~20,000 of
    them, mostly of equal values: an argsort per run cost ~6 ms in all), by an
    argsort for longer ones."""
    order = (packed & ((ONE << shift) - ONE)).astype(np.int64)
    start = 0
    for i in range(1, packed.size + 1):
        if i == packed.size or packed[i] >> shift != packed[start] >> shift:
            if i - start > SHORT_RUN:
                run = order[start:i]
                order[start:i] = run[np.argsort(data[run])]
            else:
                for j in range(start + 1, i):
                    index, m = order[j], j
                    while m > start and data[order[m - 1]] > data[index]:
                        order[m] = order[m - 1]
                        m -= 1
                    order[m] = index
            start = i
    return order


def sort_order(data):
    """An argsort of a float64 array without NaN (ties in any order)."""
    shift = np.uint64(max(1, (data.size - 1).bit_length()))
    packed = _packed_keys(data, shift)
    packed.sort()
    return _order_of(data, packed, shift)


@numba.njit(cache=True, nogil=True)
def _padded_running_median(data, order, kernel, out):
    """The running median of ``data`` (``order``: its argsort) into ``out``,
    padded as TLS pads it (``_pad_to_length``: the first median repeated
    before, the last after)."""
    n = data.size
    bits = np.zeros((n >> 6) + 2, np.uint64)
    ranks = np.empty(n, np.int64)
    ranks[order] = np.arange(n)
    first = (kernel - 1) // 2
    last = first + n - kernel  # the unpadded medians go to out[first:last + 1]
    _running_median(data[order], ranks, kernel, bits, out[first:last + 1])
    out[:first] = out[first]
    out[last + 1:] = out[last]


def running_median(data, kernel):
    """``helpers.running_median(data, kernel)`` of a float64 array without NaN
    and an odd ``kernel`` no longer than it."""
    if kernel % 2 == 0 or not 1 <= kernel <= data.size:
        raise ValueError(f"the kernel must be odd, positive and no longer than the array: {kernel}")
    data = np.ascontiguousarray(data, np.float64)
    out = np.empty(data.size)
    _padded_running_median(data, sort_order(data), kernel, out)
    return out
