"""The GPU scan work list: every (period, width, shift) exactly once, in CPU order."""

import numpy as np
import pytest

from backends.scan_jobs import scan_jobs, shift_counts

WIDTHS = np.array([1, 3, 7, 20, 33], np.int32)
STRIDES = np.array([1, 1, 2, 3, 5], np.int32)


def _expand(jobs, m, chunk):
    """(period, width, shift) triples the jobs cover, in job order."""
    out = []
    for p, wi, first in zip(jobs.period, jobs.width, jobs.first):
        n = shift_counts(WIDTHS[wi:wi + 1], STRIDES[wi:wi + 1], m)[0]
        out += [(p, wi, s * STRIDES[wi]) for s in range(first, min(first + chunk, n))]
    return out


@pytest.mark.parametrize("chunk", [1, 4, 64])
def test_jobs_cover_every_shift_once_in_cpu_order(chunk):
    m = 50
    lo = np.array([0, 2, 1, 3], np.int32)
    hi = np.array([5, 2, 4, 5], np.int32)  # period 1 has no allowed width
    jobs = scan_jobs(lo, hi, WIDTHS, STRIDES, m, chunk)
    brute = [(p, wi, i) for p in range(lo.size) for wi in range(lo[p], hi[p])
             for i in range(0, m - WIDTHS[wi] + 1, STRIDES[wi])]
    assert _expand(jobs, m, chunk) == brute
    assert list(jobs.period_start) == [0, *np.cumsum(np.bincount(jobs.period, minlength=4))]
    assert jobs.period_start[1] == jobs.period_start[2]  # the empty period


def test_no_periods_no_jobs():
    jobs = scan_jobs(np.zeros(0, np.int32), np.zeros(0, np.int32), WIDTHS, STRIDES, 50, 8)
    assert jobs.size == 0 and list(jobs.period_start) == [0]


def test_widths_longer_than_the_fold_have_no_shifts():
    assert list(shift_counts([10, 11, 12], [1, 1, 1], 11)) == [2, 1, 0]


def test_more_jobs_than_int32_is_refused():
    with pytest.raises(ValueError, match="32-bit"):
        scan_jobs(np.array([0]), np.array([1]), WIDTHS, STRIDES, 2**31, 1 << 20)
