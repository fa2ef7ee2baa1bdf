"""How big a search will be, from TLS's own formulas, before anything is built.

TLS's period grid (Ofir 2014; ``transitleastsquares.grid.period_grid``) is
uniform in f^(1/3) with N_opt points between f_min = n_transits_min / span and
f_max (an orbit at 3 stellar radii); it grows with the span, gaps included,
and TLS allocates the whole of it before cutting it to period_min..period_max.
Times in seconds instead of days make the span 86,400 times longer: 10+
minutes and gigabytes later, the search dies. ``check`` counts the grid
analytically and refuses a search over the limits, naming the likely cause:

    TLS_WORKBENCH_MAX_WORK       trial periods x points (default 1e12)
    TLS_WORKBENCH_MAX_MEMORY_GB  TLS's grid and per-period arrays (default 4)
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

import numpy as np

MAX_WORK_VAR, MAX_MEMORY_VAR = "TLS_WORKBENCH_MAX_WORK", "TLS_WORKBENCH_MAX_MEMORY_GB"
DEFAULT_MAX_WORK, DEFAULT_MAX_MEMORY_GB = 1e12, 4.0
GRID_ARRAYS = 5  # float64 arrays period_grid allocates over the whole, uncut grid
PERIOD_ARRAYS = 16  # float64-sized arrays per searched period: statistics, spectra, results
LONGEST_SPAN_DAYS = 1e4  # longer: not days (27 years of data)


def _star(R_star, M_star):
    """Stellar radius [m] and G*M [m^3/s^2], clamped as TLS clamps them."""
    from transitleastsquares import tls_constants as c

    R = min(max(R_star, 0.01), 10000) * c.R_sun
    return R, c.G * min(max(M_star, 0.01), 1000) * c.M_sun


def shortest_period(R_star=1.0, M_star=1.0):
    """Shortest trial period [d] of TLS's grid: orbit at 3 stellar radii."""
    from transitleastsquares import tls_constants as c

    R, GM = _star(R_star, M_star)
    return 2 * math.pi / math.sqrt(GM / (3 * R) ** 3) / c.SECONDS_PER_DAY


@dataclass(frozen=True)
class SearchSize:
    grid: int  # periods of TLS's grid before the period_min/period_max cut
    periods: int  # trial periods searched
    points: int

    @property
    def work(self) -> int:
        """Trial periods x points: every backend folds every point at every period."""
        return self.periods * self.points

    @property
    def memory(self) -> int:
        """Bytes of TLS's grid and per-period arrays."""
        return 8 * (GRID_ARRAYS * self.grid + PERIOD_ARRAYS * self.periods)


def estimate(span, points, R_star=1.0, M_star=1.0, period_min=0, period_max=math.inf,
             oversampling_factor=3, n_transits_min=2, **_) -> SearchSize:
    """The size of TLS's search of ``points`` points over ``span`` days, from the
    Ofir formula (grid X = 1..ceil(N_opt), f_X = (A/3 X + C)^3), without the grid."""
    from transitleastsquares import tls_constants as c

    R, GM = _star(R_star, M_star)
    seconds = span * c.SECONDS_PER_DAY
    f_min = n_transits_min / seconds
    f_max = math.sqrt(GM / (3 * R) ** 3) / (2 * math.pi)
    A = (2 * math.pi) ** (2 / 3) / math.pi * R / GM ** (1 / 3) / (seconds * oversampling_factor)
    C = f_min ** (1 / 3) - A / 3
    grid = max(0, math.ceil((f_max ** (1 / 3) - f_min ** (1 / 3) + A / 3) * 3 / A))

    def index(period):  # the real X at which the grid reaches ``period`` [d]
        return ((period * c.SECONDS_PER_DAY) ** (-1 / 3) - C) * 3 / A

    first = max(1, math.ceil(index(period_max))) if period_max < math.inf else 1
    last = min(grid, math.ceil(index(period_min)) - 1) if period_min > 0 else grid
    return SearchSize(grid=grid, periods=max(0, last - first + 1), points=int(points))


def _limit(variable, default):
    text = os.environ.get(variable)
    try:
        return default if text in (None, "") else float(text)
    except ValueError:
        raise ValueError(f"{variable}={text!r} is not a number") from None


def likely_cause(t) -> str:
    """Why a light curve ``t`` [d] makes a large grid: time units, gaps, or its length."""
    span = float(np.ptp(t))
    cadence = float(np.median(np.diff(t))) if t.size > 1 else 0.0
    if span > LONGEST_SPAN_DAYS or cadence > 1.0:
        return (f"the times span {span:.4g} 'days' with a median step of {cadence:.3g}: times in "
                "seconds (or minutes) instead of days? transitleastsquares wants days")
    covered = t.size * cadence / span if span > 0 else 1.0
    if covered < 0.5:
        return (f"the data cover {covered:.0%} of their {span:.4g}-day span, and TLS's grid grows "
                "with the span, gaps included: search the segments apart, or set period_max")
    return (f"a {span:.4g}-day light curve of {t.size:,} points: set period_max (or period_min) or "
            "a lower oversampling_factor")


def check(t, **options) -> SearchSize:
    """The size of the search of times ``t`` [d] with TLS ``options``; ValueError
    naming the size and its likely cause when it exceeds the limits."""
    t = np.asarray(t, dtype=np.float64)
    finite = np.isfinite(t)
    if not finite.all():  # a cleaned light curve's are (no copy then)
        t = t[finite]
    size = estimate(float(t.max() - t.min()) if t.size else 0.0, t.size, **options)
    max_work = _limit(MAX_WORK_VAR, DEFAULT_MAX_WORK)
    max_gb = _limit(MAX_MEMORY_VAR, DEFAULT_MAX_MEMORY_GB)
    if size.work > max_work or size.memory > max_gb * 1e9:
        raise ValueError(
            f"search too large: {size.periods:,} trial periods x {size.points:,} points = "
            f"{size.work:.3g} (limit {max_work:.3g}, {MAX_WORK_VAR}), ~{size.memory / 1e9:.3g} GB "
            f"for TLS's period grid of {size.grid:,} and its per-period arrays (limit {max_gb:g} GB, "
            f"{MAX_MEMORY_VAR}). Likely cause: {likely_cause(np.sort(t))}")
    return size
