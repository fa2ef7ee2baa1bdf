"""transitleastsquares' model of one light curve as ``power()`` prepares it:
TLS's validation of the data and of the options, its grids, its templates
and its ``SearchProblem``, built once per light curve. ``power()`` on this
model searches and computes its statistics without building any of it again.

Grids and templates depend on a few numbers, not on the light curve's
values, so they are kept across light curves in bounded LRUs keyed on every
input TLS's code reads (its module constants included): light curves with
the same span, length and options share them. A build's warnings (TLS's
grid fallbacks) are given again whenever the cached value is used, as TLS
would give them.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
from transitleastsquares import tls_constants
from transitleastsquares.main import transitleastsquares
from transitleastsquares.validate import validate_args

from backends.bounded_cache import BoundedCache
from backends.plan import Templates
from backends.tls_power import MEAN_FLUX_WARNING

GRIDS = BoundedCache(maxsize=32)  # a grid: 16 bytes per period
TEMPLATES = BoundedCache(maxsize=16)  # templates: ~0.1-0.2 x N^2 values (K2: ~0.5 MB; 100,000 points: ~10 MB)

# what TLS's _grids() reads besides the time span (it passes 1/N to duration_grid,
# which TLS 2.0.4 ignores), and what _templates() and our Templates read besides
# the durations, N and the limb darkening u
GRID_ARGS = ("R_star", "M_star", "period_min", "period_max", "oversampling_factor", "n_transits_min",
             "duration_grid_step", "R_star_min", "R_star_max", "M_star_min", "M_star_max")
GRID_CONSTANTS = ("R_sun", "M_sun", "G", "SECONDS_PER_DAY", "MINIMUM_PERIOD_GRID_SIZE")
TEMPLATE_ARGS = ("per", "rp", "a", "inc", "ecc", "w", "limb_dark", "T0_search_margin", "transit_depth_min")
TEMPLATE_CONSTANTS = ("SIGNAL_DEPTH", "NUMERICAL_STABILITY_CUTOFF", "TRANSIT_MODEL", "SUPERSAMPLE_SIZE")


@dataclass(frozen=True)
class Grid:
    """TLS's period grid (descending, as TLS builds it), the order that sorts
    it ascending (as TLS sorts a search's results; a reversing slice where it
    is strictly descending) and its duration grid."""

    periods: np.ndarray
    ascending: np.ndarray | slice
    durations: list  # fractions of the period, as TLS's duration_grid returns them


@dataclass(frozen=True)
class TemplateCache:
    """TLS's template cache (``transit.get_cache``) and the scans' view of it,
    and the width windows of its grid's periods (``Plan.width_windows``: they
    depend only on what the key of this cache holds, ~0.7 ms per K2 search),
    with what is counted from them (``Plan.kept_with_windows``)."""

    overview: np.ndarray
    lc_arr: np.ndarray
    templates: Templates
    windows: BoundedCache = field(default_factory=lambda: BoundedCache(maxsize=2), compare=False)


def _recorded(build):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = build()
    return value, [(str(w.message), w.category) for w in caught]


def cached(cache: BoundedCache, key, build):
    """``build()``'s value from ``cache`` under ``key()``, its build's warnings
    given again; built for this call alone where the key cannot be formed or
    hashed (an option of a type TLS may reject: TLS then says what is wrong)."""
    try:
        key = key()
        hash(key)
    except (TypeError, ValueError):
        return build()
    value, warned = cache.get(key, lambda: _recorded(build))
    for message, category in warned:
        warnings.warn(message, category, stacklevel=3)
    return value


def _constants(names):
    return tuple(getattr(tls_constants, name) for name in names)


class PlannedModel(transitleastsquares):
    """TLS's model of a light curve (``t, y, dy`` cleaned) and ``power()``
    options, with its grids, templates and search problem made once; its
    ``power(**options)`` takes them instead of building them. ``cleaned``:
    ``t, y, dy`` are a ``backends.inputs.clean`` light curve's own arrays."""

    def __init__(self, t, y, dy, options: dict, cleaned=False):
        if cleaned:
            self._take_cleaned(t, y, dy)
        else:
            with warnings.catch_warnings():  # backends.inputs.clean warns with advice instead
                warnings.filterwarnings("ignore", message=MEAN_FLUX_WARNING)
                super().__init__(t, y, dy, verbose=False)
        self.options = dict(options)
        validate_args(self, {"verbose": False, "show_progress_bar": False, **options})
        self.grid = cached(GRIDS, self.grid_key, self._build_grid)
        self.cache = cached(TEMPLATES, self.template_key, self._build_templates)
        self.problem = super()._problem(self.t, self.y, self.dy, self.cache.overview, self.cache.lc_arr)

    def _take_cleaned(self, t, y, dy):
        """TLS's ``__init__`` of a cleaned light curve: there its
        ``validate_inputs`` drops and rejects nothing (finite values, flux and
        errors > 0, at least 3 distinct times), so what is left of it is the
        errors' normalisation, or their stand-in (~60 us per K2-like curve).
        The arrays are the cleaned light curve's, copies of the caller's."""
        self.t, self.y = t, y
        self.dy = np.full(y.size, y.std()) if dy is None else dy / dy.mean()
        self.verbose = self._verbose_init = False

    def grid_key(self) -> tuple:
        span = float(self.t.max() - self.t.min())  # as _grids() computes it
        return (span, *(getattr(self, name) for name in GRID_ARGS), *_constants(GRID_CONSTANTS))

    def template_key(self) -> tuple:
        u = tuple(np.ravel(np.asarray(self.u, dtype=float)).tolist())
        return (self.grid_key(), self.y.size, u, *(getattr(self, name) for name in TEMPLATE_ARGS),
                *_constants(TEMPLATE_CONSTANTS))

    def _build_grid(self) -> Grid:
        periods, durations = super()._grids()
        periods = np.asarray(periods)
        descending = bool(np.all(periods[1:] < periods[:-1]))  # TLS's grid: reversed views, no gathers
        return Grid(periods, slice(None, None, -1) if descending else np.argsort(periods), durations)

    def _build_templates(self) -> TemplateCache:
        overview, lc_arr = super()._templates(self.grid.durations)
        return TemplateCache(overview, lc_arr, Templates.from_cache(
            overview, lc_arr, self.T0_search_margin, self.transit_depth_min))

    # ---- what power() calls to build them ------------------------------------------------
    def _grids(self):
        return self.grid.periods, self.grid.durations

    def _templates(self, durations):
        return self.cache.overview, self.cache.lc_arr

    def _problem(self, t, y, dy, lc_cache_overview, lc_arr):
        if t is self.t and lc_arr is self.cache.lc_arr:
            return self.problem
        return super()._problem(t, y, dy, lc_cache_overview, lc_arr)  # a pre-binned copy's
