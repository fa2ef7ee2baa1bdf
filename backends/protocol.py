"""The ``TLSBackend`` protocol: one method per stage of the TLS search.

Stages, in the order ``search`` runs them:

1. ``period_grid``    host: TLS's Ofir period grid            (shared)
2. ``duration_grid``  host: TLS's duration grid (fractions of P) (shared)
3. ``template_cache`` host: TLS's templates, one per unique width (shared)
4. ``upload``         light curve and templates to the device   (per backend)
5. ``fold_sort``      phase-fold each trial period, order by phase (per backend)
6. ``chi2_scan``      per period: min chi2, template row, depth    (per backend)

Stages 1-3 are transitleastsquares' own functions, so every backend searches
the same grid with the same templates; only 4-6 differ between backends.
Each stage can be called and timed on its own; ``search`` composes 4-6 over
period batches small enough for the device (``max_batch_periods``).
"""

from __future__ import annotations

import contextlib
import time
from collections import defaultdict
from dataclasses import dataclass
from typing import Callable, ClassVar, Optional

import numpy as np

from backends.plan import LightCurve, Plan, Templates


@dataclass
class PeriodStats:
    """Result of a chi2 scan, one entry per trial period in the order given.

    ``rows`` is the TLS template-cache row of the best fit and ``depths`` the
    flux at transit bottom (1 - depth), as TLS's ``SearchResult`` has them;
    a period where no shift passed the depth filter keeps the flat-model chi2,
    row 0 and depth 0.
    """

    chi2: np.ndarray
    rows: np.ndarray
    depths: np.ndarray

    @classmethod
    def concatenate(cls, parts):
        if len(parts) == 1:  # a search of one batch (most): nothing to copy
            return parts[0]
        return cls(*(np.concatenate(x) for x in zip(*((p.chi2, p.rows, p.depths) for p in parts))))

    @classmethod
    def from_gains(cls, plan, gain, index, depth) -> "PeriodStats":
        """From per-period (best gain, width index or -1, depth) arrays, as
        every scan forms them: chi2 = flat chi2 - gain, the width's TLS row."""
        return cls(
            chi2=plan.lc.chi2_flat - np.asarray(gain, np.float64),
            rows=plan.templates.row_of_index[np.asarray(index)],
            depths=np.asarray(depth, np.float64),
        )


class StageTimes(defaultdict):
    """Seconds per stage, accumulated over a search: the host's clock with the
    device synchronised before every read, or CUDA events between a stage's
    launches where a backend queues them (``pruned``)."""

    def __init__(self):
        super().__init__(float)


class WorkCounts(defaultdict):
    """Integer work counters of a scan that skips work, accumulated over a
    search (``backends.pruning.COUNTERS``, ``tensor.WORK``)."""

    def __init__(self):
        super().__init__(int)


class InputTooLarge(ValueError):
    """This backend cannot hold this light curve (e.g. in shared memory); the
    message says which backend can. Checked before any launch."""


def trial_periods(periods) -> np.ndarray:
    """``periods`` as a backend searches them (contiguous float64), checked:
    at least one, each finite and positive."""
    periods = np.ascontiguousarray(periods, dtype=np.float64)
    if periods.ndim != 1 or periods.size == 0:
        raise ValueError(f"a search needs a 1-d array of at least one trial period, not shape {periods.shape}")
    if not (periods.min() > 0 and np.isfinite(periods.max())):  # a NaN makes min() NaN: refused too
        raise ValueError("trial periods must be finite and positive")
    return periods


class TLSBackend:
    """Base class of every backend. Subclasses implement ``fold_sort`` and
    ``chi2_scan`` (and ``upload`` where data must move to a device)."""

    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    exact: ClassVar[bool] = True  # reproduces TLS's exact statistic
    device: ClassVar[str] = "cpu"  # "cpu" or "gpu"
    fuses_fold_sort: ClassVar[bool] = False  # chi2_scan folds and sorts itself (folds_in_scan)

    @classmethod
    def missing(cls) -> Optional[str]:
        """Why this backend cannot run here (None when it can). Must not
        create a GPU context."""
        return None

    def __init__(self):
        self.timings = StageTimes()
        self.work = WorkCounts()

    def refuses(self, plan: Plan) -> Optional[str]:
        """Why this backend cannot search ``plan`` (None when it can); ``upload``
        raises ``InputTooLarge`` with this reason."""
        return None

    # ---- stages 1-3: host, shared -------------------------------------------------
    @staticmethod
    def period_grid(time_span, **options) -> np.ndarray:
        from backends import grids

        return grids.period_grid(time_span, **options)

    @staticmethod
    def duration_grid(periods, **options) -> np.ndarray:
        from backends import grids

        return grids.duration_grid(periods, **options)

    @staticmethod
    def template_cache(durations, n_points, **options) -> Templates:
        from backends import grids

        return grids.template_cache(durations, n_points, **options)

    # ---- stages 4-6: per backend ---------------------------------------------------
    def upload(self, plan: Plan):
        """Move the light curve and templates to where the scan runs; returns
        the backend's state for ``fold_sort`` and ``chi2_scan``."""
        return plan

    def fold_sort(self, state, periods: np.ndarray):
        raise NotImplementedError

    def chi2_scan(self, state, folded, periods, lo, hi) -> PeriodStats:
        raise NotImplementedError

    def synchronize(self):
        """Wait for the device (before a clock is read)."""

    def folds_in_scan(self, plan: Plan) -> bool:
        """Whether ``chi2_scan`` folds and sorts ``plan``'s periods itself
        (``fold_sort`` is then skipped)."""
        return self.fuses_fold_sort

    def max_batch_periods(self, plan: Plan) -> int:
        """Periods per fold+scan batch: bounds device memory and launch length."""
        return 1 << 62

    # ---- composition ---------------------------------------------------------------
    @contextlib.contextmanager
    def clock(self, stage):
        """Adds the wall time of the ``with`` block to ``timings[stage]``."""
        start = time.perf_counter()
        yield
        self.timings[stage] += time.perf_counter() - start

    def _timed(self, stage, fn, *args):
        with self.clock(stage):
            out = fn(*args)
            self.synchronize()
        return out

    def search(
        self,
        plan: Plan,
        periods,
        progress: Optional[Callable[[int], None]] = None,
    ) -> PeriodStats:
        """Per-period chi2 minimum, template row and depth for ``periods``."""
        periods = trial_periods(periods)
        with self.clock("duration_grid"):  # host work alone: nothing to wait for
            lo, hi = plan.width_windows(periods)
        state = self._timed("upload", self.upload, plan)
        return self.search_batches(state, plan, periods, lo, hi, progress)

    def search_batches(self, state, plan: Plan, periods, lo, hi, progress=None) -> PeriodStats:
        """``search`` after the upload: ``fold_sort`` and ``chi2_scan`` of each
        batch of ``max_batch_periods``, in turn (a backend that can queue one
        batch while the device runs another overrides it)."""
        step = max(1, int(self.max_batch_periods(plan)))
        fused = self.folds_in_scan(plan)
        parts = []
        for start in range(0, periods.size, step):
            sl = slice(start, start + step)
            folded = None
            if not fused:
                folded = self._timed("fold_sort", self.fold_sort, state, periods[sl])
            parts.append(
                self._timed("chi2_scan", self.chi2_scan, state, folded, periods[sl], lo[sl], hi[sl])
            )
            if progress is not None:
                progress(periods[sl].size)
        return PeriodStats.concatenate(parts)

    def search_many(self, jobs, progress: Optional[Callable[[int], None]] = None,
                    found: Optional[Callable[[int, PeriodStats], None]] = None) -> list:
        """``search`` of many light curves: ``jobs`` holds (plan, periods) pairs;
        one ``PeriodStats`` per job, in order. ``found(k, stats)``, if given,
        gets job k's as soon as they are known, so that a caller can use them
        while the others run. By default one ``search`` each; a backend that
        runs many light curves per launch overrides it."""
        out = []
        for k, (plan, periods) in enumerate(jobs):
            out.append(self.search(plan, periods, progress))
            if found is not None:
                found(k, out[-1])
        return out

    def __repr__(self):
        return f"<{type(self).__name__} {self.name!r}>"


__all__ = ["InputTooLarge", "LightCurve", "PeriodStats", "Plan", "StageTimes", "TLSBackend", "Templates",
           "WorkCounts", "trial_periods"]
