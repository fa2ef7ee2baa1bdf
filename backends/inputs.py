"""Front-end input handling: array-likes, astropy Quantity/Time and
LightCurve-like objects in; clean float64 arrays and a cleaning report out.

Cleaning (documented, counted in ``meta["cleaning"]``):
  * rows whose time, flux or flux error is NaN/inf are dropped (as TLS does);
  * rows with flux <= 0 are dropped (as TLS does);
  * the rows are put in time order (TLS re-sorts by phase for every period,
    so the result does not depend on the input order).
Errors (``ValueError`` with what to do): mismatched lengths, arrays that are
not 1-D, non-positive flux errors, duplicate times, fewer than 3 points left,
a baseline too short for ``n_transits_min`` transits of the shortest trial
period, an unknown ``power()`` option (naming the nearest), a search over the
size limits (``backends.search_size``). A flux whose mean is not ~1 gets a
warning (TLS's model assumes a normalised, detrended light curve).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np

from backends import search_size

MIN_POINTS = 3


@dataclass
class CleanLightCurve:
    t: np.ndarray
    y: np.ndarray
    dy: np.ndarray | None
    report: dict = field(default_factory=dict)


def _values(x, unit=None):
    """Plain float64 values of an array-like, astropy Quantity/Time or masked array."""
    if x is None:
        return None
    if hasattr(x, "jd") and hasattr(x, "format"):  # astropy Time: its own scale and format
        x = x.value
    if hasattr(x, "unit") and hasattr(x, "to_value"):  # astropy Quantity
        x = x.to_value(unit) if unit is not None and str(x.unit) not in ("", "dimensionless") else x.value
    if np.ma.isMaskedArray(x):
        x = np.ma.filled(np.ma.asarray(x, dtype=np.float64), np.nan)
    arr = np.asarray(x, dtype=np.float64)
    return arr


def unpack(t, y=None, dy=None):
    """(t, y, dy) from arrays or from a LightCurve-like ``t`` (.time, .flux, .flux_err)."""
    if y is None and hasattr(t, "time") and hasattr(t, "flux"):
        lc = t
        return lc.time, lc.flux, getattr(lc, "flux_err", None)
    if y is None:
        raise ValueError("give t and y arrays, or one LightCurve-like object with .time and .flux")
    return t, y, dy


def clean(t, y, dy=None) -> CleanLightCurve:
    try:
        import astropy.units as u

        day = u.day
    except ImportError:  # astropy absent: Quantities cannot occur either
        day = None
    t, y, dy = _values(t, day), _values(y), _values(dy)
    dy_all_nan = dy is not None and not np.isfinite(dy).any()
    if dy_all_nan:
        dy = None  # lightkurve gives all-NaN flux_err when there is none
    arrays = {"t": t, "y": y} if dy is None else {"t": t, "y": y, "dy": dy}
    for name, arr in arrays.items():
        if arr.ndim != 1:
            raise ValueError(f"{name} must be 1-D, got shape {arr.shape}; pass one light curve at a time")
    sizes = {name: arr.size for name, arr in arrays.items()}
    if len(set(sizes.values())) != 1:
        raise ValueError(f"t, y and dy must have the same length, got {sizes}")

    finite = np.isfinite(t) & np.isfinite(y)
    if dy is not None:
        finite &= np.isfinite(dy)
        bad = finite & (dy <= 0)
        if bad.any():
            raise ValueError(
                f"{int(bad.sum())} flux errors are <= 0; errors must be positive "
                "(drop those rows, or pass dy=None to weight all points equally)"
            )
    keep = finite & (y > 0)
    finite_rows, kept = np.count_nonzero(finite), np.count_nonzero(keep)
    report = {
        "rows_in": int(t.size),
        "dropped_nonfinite": int(t.size - finite_rows),
        "dropped_nonpositive_flux": int(finite_rows - kept),
        "dy_given": dy is not None,
    }
    if dy_all_nan:
        report["dy_all_nan_ignored"] = True
    dropped = report["dropped_nonfinite"] + report["dropped_nonpositive_flux"]
    if dropped:
        warnings.warn(f"dropped {dropped} of {t.size} rows with NaN/inf values or flux <= 0")
        t, y = t[keep], y[keep]
        dy = None if dy is None else dy[keep]
    else:  # copies all the same (faster than a mask's): the plan's arrays are never the caller's
        t, y, dy = t.copy(), y.copy(), None if dy is None else dy.copy()

    if t.size < MIN_POINTS:
        raise ValueError(f"only {t.size} valid points; TLS needs at least {MIN_POINTS}")
    report["reordered"] = False
    if not (t[1:] > t[:-1]).all():  # most light curves come time-ordered, without duplicates
        t, y, dy = _time_ordered(t, y, dy, report)
    mean = float(y.mean())
    if not 0.99 <= mean <= 1.01:
        warnings.warn(
            f"mean flux is {mean:.4g}, not ~1: TLS expects a detrended light curve normalised "
            "to 1 (divide by the median and flatten it, e.g. datasets.detrend)"
        )
    report["rows_searched"] = int(t.size)
    return CleanLightCurve(t, y, dy, report)


def _time_ordered(t, y, dy, report):
    """(t, y, dy) in time order (``report["reordered"]`` says whether that
    moved any); ValueError where times repeat."""
    order = np.argsort(t, kind="mergesort")
    report["reordered"] = bool(np.any(order != np.arange(t.size)))
    t, y = t[order], y[order]
    dy = None if dy is None else dy[order]
    duplicates = int(np.count_nonzero(np.diff(t) == 0))
    if duplicates:
        raise ValueError(
            f"{duplicates} duplicate time stamps; combine or drop repeated cadences "
            "(e.g. overlapping sectors) before searching"
        )
    return t, y, dy


def check_options(options) -> None:
    """ValueError for a keyword transitleastsquares' ``power()`` does not know,
    naming the nearest valid one (TLS itself only warns and runs with its defaults)."""
    import difflib

    from transitleastsquares import tls_constants

    valid = tls_constants.VALID_PARAMETERS
    for key in options:
        if key not in valid:
            nearest = difflib.get_close_matches(str(key), valid, n=1, cutoff=0.0)
            raise ValueError(f"unknown power() option {key!r}: did you mean {nearest[0]!r}? "
                             f"(valid: {', '.join(sorted(valid))})")


def check_baseline(t, n_transits_min=2, R_star=1.0, M_star=1.0, **_):
    span = float(np.nanmax(t) - np.nanmin(t))
    p_min = search_size.shortest_period(R_star, M_star)
    if span / n_transits_min <= p_min:
        raise ValueError(
            f"baseline of {span:.3g} d is too short for {n_transits_min} transits: the shortest "
            f"trial period is {p_min:.3g} d, so at least {n_transits_min * p_min:.3g} d of data "
            "are needed (or lower n_transits_min)"
        )


def check_search(t, options) -> None:
    """Every check of a search before anything is built: known ``power()``
    options, a baseline long enough, and a size within the limits
    (``backends.search_size``)."""
    check_options(options)
    check_baseline(t, **options)
    search_size.check(t, **options)
