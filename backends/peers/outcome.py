"""A peer's outcome: one flat dict, whatever happened to the search.

Keys: ``FIELDS`` (period, t0, duration [d], depth_ppm, sde, snr, fap, runtime_s,
error; a value the peer does not give is NaN), plus ``status``, ``name``,
``device`` and ``version``. ``status`` is one of

* ``ok``: the peer returned a result that passed the checks below;
* ``nonsense``: it returned values, kept as they are, that cannot be a search's
  result: NaN period, T0, duration or SDE, a period at either end of the grid
  searched (GTLS 0.4.4 answered the shortest trial period when its periodogram
  was NaN) or outside it, a duration not between 0 and the period;
* ``failed``: the peer raised an exception (its last line is kept);
* ``crashed``: its process ended during the search (the signal is named);
* ``timeout``: no answer within the time allowed (its process was killed).

``error`` is None when ``status`` is ``ok``, else "<status>: <why>".
"""

from __future__ import annotations

import math

import numpy as np

FIELDS = ("period", "t0", "duration", "depth_ppm", "sde", "snr", "fap", "runtime_s", "error")
FOUND = FIELDS[:7]  # what a peer's search gives
EDGE_RTOL = 1e-9  # a period this close to the grid's first or last one is at its edge


def number(value) -> float:
    """``value`` as a float; NaN for None, a masked value or anything not a number."""
    try:
        return float(np.ma.filled(np.ma.asarray(value, dtype=np.float64), np.nan))
    except (TypeError, ValueError):
        return math.nan


def failed(error: str, seconds: float = math.nan) -> dict:
    """The fields of a search that gave no result (any search side's)."""
    out = dict.fromkeys(FIELDS, math.nan)
    out.update(error=error, runtime_s=seconds)
    return out


def failure(status: str, why: str, seconds: float) -> dict:
    """The outcome of a peer's search that gave no result."""
    return {**failed(f"{status}: {why}", seconds), "status": status}


def problems(found: dict, periods: np.ndarray) -> list:
    """Why ``found`` cannot be a search's result over trial ``periods`` (empty: it can)."""
    why = [f"{key} is {found[key]}" for key in ("period", "t0", "duration", "sde")
           if not math.isfinite(found[key])]
    period, duration = found["period"], found["duration"]
    if math.isfinite(period):
        lo, hi = float(np.min(periods)), float(np.max(periods))
        if math.isclose(period, lo, rel_tol=EDGE_RTOL):
            why.append(f"period {period:.6g} d is the shortest trial period")
        elif math.isclose(period, hi, rel_tol=EDGE_RTOL):
            why.append(f"period {period:.6g} d is the longest trial period")
        elif not lo < period < hi:
            why.append(f"period {period:.6g} d is outside the periods searched ({lo:.6g}-{hi:.6g} d)")
        if math.isfinite(duration) and not 0 < duration < period:
            why.append(f"duration {duration:.6g} d is not between 0 and the period")
    return why


def judged(found: dict, seconds: float, periods: np.ndarray) -> dict:
    """The outcome of a search that returned ``found`` (a dict; anything else
    counts as empty): ``ok`` or ``nonsense``."""
    found = found if isinstance(found, dict) else {}
    out = {key: number(found.get(key)) for key in FOUND}
    why = problems(out, periods)
    out.update(runtime_s=seconds, status="nonsense" if why else "ok",
               error="nonsense: " + "; ".join(why) if why else None)
    return out
