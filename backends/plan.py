"""Host-side search plan shared by every backend: the light curve, the template
cache and, per trial period, the allowed template widths.

Everything here is derived from transitleastsquares' own ``SearchProblem`` (or
its grid and template functions), so that every backend searches exactly what
TLS 2.0.4 searches: same period grid, same unique template widths, same
per-period width limits (T14 with the worst-case transit-count correction),
same phase-shift stride, same overshoot.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numba
import numpy as np
from transitleastsquares.grid import T14
from transitleastsquares.tls_constants import FRACTIONAL_TRANSIT_DURATION_MAX as FRACTION_MAX


@dataclass(frozen=True)
class LightCurve:
    """Cleaned light curve as TLS searches it: absolute times (epoch 0, as TLS
    folds), flux, inverse-variance weights w = 1/dy**2 with dy normalised to
    mean 1, and the flat-model chi2 (the per-period fallback). ``samples``
    holds t, y and w as the rows of one array, which a GPU backend uploads in
    one copy without packing them first."""

    samples: np.ndarray
    chi2_flat: float

    @classmethod
    def from_arrays(cls, t, y, dy):
        samples = np.empty((3, np.size(t)))
        samples[0], samples[1] = t, y
        samples[2] = 1.0 / np.asarray(dy, dtype=np.float64) ** 2
        _, y, w = samples
        return cls(samples, chi2_flat=float(np.sum((y - 1.0) ** 2 * w)))

    @property
    def t(self) -> np.ndarray:
        return self.samples[0]

    @property
    def y(self) -> np.ndarray:
        return self.samples[1]

    @property
    def w(self) -> np.ndarray:
        return self.samples[2]

    @property
    def size(self) -> int:
        return self.t.size

    @property
    def time_span(self) -> float:
        return float(self.t.max() - self.t.min())

    @functools.cached_property
    def uniform_weight(self) -> float:
        """The weight every sample has, or 0.0 when the weights differ (with
        uniform weights A2 = w sum(a^2) needs no dot product)."""
        return float(self.w[0]) if np.all(self.w == self.w[0]) else 0.0

    @functools.cached_property
    def least_weight(self) -> float:
        """The least weight: A2 >= least_weight * sum(a^2) at every shift, the
        pruned cascade's constant A2 floor where weights differ."""
        return float(self.w.min())


@dataclass(frozen=True)
class Templates:
    """The template cache reduced to what a chi2 scan reads, one entry per
    unique template width (ascending), as ``core.search_period`` iterates them.

    ``a`` holds 1 - signal for every template, concatenated (``offsets`` has
    one more entry than ``widths``); a model of box depth D at shift i is
    1 - (D * overshoot / SIGNAL_DEPTH) * a.
    """

    widths: np.ndarray  # int32, samples of the folded light curve
    rows: np.ndarray  # int32, row of the TLS cache (first row with that width)
    offsets: np.ndarray  # int64, into a
    a: np.ndarray  # float64
    overshoot: np.ndarray  # float64
    strides: np.ndarray  # int32, phase-shift stride per width
    maxwidth: int  # wrap-around patch length: max width rounded up to even
    depth_min: float  # transit_depth_min: shifts with box depth <= this are skipped
    signal_depth: float  # tls_constants.SIGNAL_DEPTH

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    @property
    def kscale(self) -> np.ndarray:
        """k per unit box depth of each width: the model is 1 - k a."""
        return self.overshoot / self.signal_depth

    @functools.cached_property
    def row_of_index(self) -> np.ndarray:
        """The TLS row of each width index, then 0 for index -1 (no shift
        passed the depth filter): a scan's best width index to its row."""
        return np.append(self.rows, 0).astype(np.intp)

    @functools.cached_property
    def pieces(self):
        """The pruning bounds' per-template constants (``backends.pruning``)."""
        from backends.pruning import PieceTables

        return PieceTables.build(self)

    @classmethod
    def from_cache(cls, lc_cache_overview, lc_arr, T0_search_margin, transit_depth_min):
        from transitleastsquares import tls_constants

        all_widths = np.asarray(lc_cache_overview["width_in_samples"])
        widths = np.unique(all_widths)
        rows = np.array([np.flatnonzero(all_widths == d)[0] for d in widths], np.int32)
        signals = [np.asarray(lc_arr[r], dtype=np.float64) for r in rows]
        offsets = np.zeros(len(widths) + 1, np.int64)
        offsets[1:] = np.cumsum([len(s) for s in signals])
        maxwidth = int(widths.max())
        maxwidth += maxwidth % 2
        return cls(
            widths=widths.astype(np.int32),
            rows=rows,
            offsets=offsets,
            a=1.0 - np.concatenate(signals),
            overshoot=np.asarray(lc_cache_overview["overshoot"], np.float64)[rows],
            strides=np.array([shift_stride(d, T0_search_margin) for d in widths], np.int32),
            maxwidth=maxwidth,
            depth_min=float(transit_depth_min),
            signal_depth=float(tls_constants.SIGNAL_DEPTH),
        )


def shift_stride(width: int, margin: float) -> int:
    """Phase-shift stride of a template ``width`` samples wide (core.py rule)."""
    if margin > 0 and width > margin:
        return max(1, int(width / (1 / margin)))
    return 1


@dataclass(frozen=True)
class Plan:
    """Everything a backend needs to scan a light curve."""

    lc: LightCurve
    templates: Templates
    R_star_min: float
    R_star_max: float
    M_short: float  # mass paired with R_star_min (shortest duration)
    M_long: float  # mass paired with R_star_max (longest duration)
    problem: object = None  # the TLS SearchProblem this plan was made from
    # the TLS model it was made for (backends.tls_model.PlannedModel): power() and the
    # statistics take its options, grids and templates; None for a problem TLS made
    model: object = None

    @classmethod
    def from_tls_problem(cls, problem, templates=None, model=None) -> "Plan":
        """From the ``SearchProblem`` transitleastsquares hands its backends
        (``templates``: its template cache's, where already made)."""
        if templates is None:
            templates = Templates.from_cache(problem.lc_cache_overview, problem.lc_arr,
                                             problem.T0_search_margin, problem.transit_depth_min)
        return cls(
            lc=LightCurve.from_arrays(problem.t, problem.y, problem.dy),
            templates=templates,
            R_star_min=problem.R_star_min,
            R_star_max=problem.R_star_max,
            M_short=problem.M_star_min,
            M_long=problem.M_star_max,
            problem=problem,
            model=model,
        )

    def width_windows(self, periods) -> tuple[np.ndarray, np.ndarray]:
        """Per period, the half-open index range [lo, hi) into
        ``templates.widths`` of the template widths searched at that period.
        For the model's own grid (the array ``make_plan`` returned) they are
        made once per template cache, so light curves that share it share
        them (read-only arrays)."""
        model = self.model
        if model is not None and periods is model.grid.periods:
            return model.cache.windows.get("grid", lambda: _read_only(*self._width_windows(periods)))
        return self._width_windows(periods)

    def kept_with_windows(self, lo, hi, name, build):
        """``build()``, kept under ``name`` beside the model grid's width
        windows when ``lo, hi`` are they (the very arrays): what depends on them
        and the template cache alone is then made once for the light curves
        that share it."""
        model = self.model
        if model is not None and "grid" in model.cache.windows:
            grid_lo, grid_hi = model.cache.windows.get("grid", None)
            if lo is grid_lo and hi is grid_hi:
                return model.cache.windows.get(name, build)
        return build()

    def _width_windows(self, periods):
        periods = np.ascontiguousarray(periods, dtype=np.float64)
        dmin, dmax = _width_limits(
            periods,
            self.lc.size,
            self.lc.time_span,
            self.R_star_min,
            self.R_star_max,
            self.M_short,
            self.M_long,
        )
        widths = self.templates.widths
        lo = np.searchsorted(widths, dmin, side="left").astype(np.int32)
        hi = np.searchsorted(widths, dmax, side="right").astype(np.int32)
        return lo, np.maximum(hi, lo)


def _read_only(*arrays) -> tuple:
    for a in arrays:
        a.flags.writeable = False
    return arrays


@numba.njit(cache=True)
def _width_limits(periods, n, span, R_min, R_max, M_short, M_long):
    """Template-width limits in samples per period, with TLS's own (numba) T14
    so that floor/ceil land exactly where they do in ``core.search_period``."""
    dmin = np.empty(periods.size, np.int64)
    dmax = np.empty(periods.size, np.int64)
    for k in range(periods.size):
        p = periods[k]
        correction = (span / p + 1) / (span / p)
        dmin[k] = int(np.floor(T14(R_min, M_short, p, FRACTION_MAX, True) * n))
        dmax[k] = int(np.ceil(T14(R_max, M_long, p, FRACTION_MAX, False) * n * correction))
    return dmin, dmax
