"""Host-side work list for block-per-job chi2 scans on a GPU.

A batch of periods is cut into jobs of at most ``chunk`` phase shifts of one
template width of one period, ordered by (period, width, first shift). A
kernel scores one job per thread block and keeps the best shift of its job
(ties to the smaller shift); a per-period pass over that period's jobs, in
order, with strict ``>`` then reproduces the CPU's "first best wins" over
widths ascending and shifts ascending. Chunking keeps the grid large (and the
blocks' work even) whatever the light-curve length.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ScanJobs:
    """One entry per job; ``period_start`` (one more entry than periods)
    delimits each period's jobs."""

    period: np.ndarray  # int32, index into the batch
    width: np.ndarray  # int32, index into templates.widths
    first: np.ndarray  # int32, first shift number (position = number * stride)
    period_start: np.ndarray  # int32

    @property
    def size(self) -> int:
        return self.period.size


def shift_counts(widths, strides, m, n=None) -> np.ndarray:
    """Shifts scanned per template width on a patched fold of length ``m``:
    ``len(range(0, m - d + 1, stride))``; given the number of real samples
    ``n``, stride-1 widths stop at shift n (later shifts repeat earlier ones,
    the pruned scans skip them as TLS's fused does)."""
    widths = np.asarray(widths, np.int64)
    strides = np.asarray(strides, np.int64)
    end = m - widths + 1
    if n is not None:
        end = np.where(strides == 1, np.minimum(end, n), end)
    return np.maximum(0, (end - 1) // strides + 1)


def window_sum(per_width, lo, hi) -> int:
    """Sum of ``per_width[lo[p]:hi[p]]`` over every period p (e.g. shifts or
    multiply-adds of each period's allowed widths)."""
    total = np.concatenate([[0], np.cumsum(per_width)])
    return int(np.sum(total[np.asarray(hi)] - total[np.asarray(lo)]))


def scan_jobs(lo, hi, widths, strides, m: int, chunk: int) -> ScanJobs:
    """Jobs for periods with allowed width windows [lo, hi) on folds of length ``m``."""
    lo = np.asarray(lo, np.int64)
    n_widths = np.asarray(hi, np.int64) - lo
    pair_period = np.repeat(np.arange(lo.size), n_widths)
    pair_first = np.cumsum(n_widths) - n_widths
    pair_width = lo[pair_period] + np.arange(pair_period.size) - pair_first[pair_period]
    chunks = -(-shift_counts(widths, strides, m)[pair_width] // chunk)
    job_pair = np.repeat(np.arange(pair_period.size), chunks)
    job_chunk = np.arange(job_pair.size) - (np.cumsum(chunks) - chunks)[job_pair]
    per_period = np.bincount(pair_period[job_pair], minlength=lo.size)
    period_start = np.zeros(lo.size + 1, np.int64)
    np.cumsum(per_period, out=period_start[1:])
    if job_pair.size and max(m, period_start[-1]) >= np.iinfo(np.int32).max:
        raise ValueError("scan too large for 32-bit job indices; use smaller batches")
    return ScanJobs(
        period=pair_period[job_pair].astype(np.int32),
        width=pair_width[job_pair].astype(np.int32),
        first=(job_chunk * chunk).astype(np.int32),
        period_start=period_start.astype(np.int32),
    )
