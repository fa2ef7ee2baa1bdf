"""The shipped real K2/TESS light curves (``datasets/data``) and their known planets.

``load(name)`` returns the light curve ready for a TLS search: the raw ones
(``meta.detrended`` not "yes") flattened with a running median, optionally
binned, optionally with the known planets' transits removed (to inject
synthetic transits into real noise). ``noise_window`` cuts many different
stretches of planet-free noise from one such curve. Times stay in the mission
system (BKJD / BTJD); planet epochs are given in that system too.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from datasets.detrend import bin_lightcurve, flatten, robust_sigma

DATA = Path(__file__).parent / "data"
REAL_NAMES = (
    "K2-3_K2_C01_everest", "WASP-75_K2_C03_everest", "K2-140_K2_C10_juliet",
    "WASP-18_TESS_S02_flat", "WASP-126_TESS_S01_alert", "PiMen_TESS_S01_huang2018",
    "TOI-540_TESS_S04-S05",
)
MIN_WINDOW = 0.2  # [d] shortest window: follows fast rotators (TOI-540: 17 h) yet spares transits
OUTLIER_SIGMA = 6.0  # noise_window drops points this many robust sigma off the median


@dataclass(frozen=True)
class Planet:
    """Literature ephemeris of a known planet, epoch in the file's time system."""

    name: str
    period: float  # [d]
    t0: float  # [d] first mid-transit inside the file
    duration: float  # [d]
    depth_ppm: float
    snr: float  # as measured in this file by the dataset's curator


@dataclass(frozen=True)
class RealLightCurve:
    name: str
    mission: str
    t: np.ndarray
    y: np.ndarray
    dy: np.ndarray
    planets: tuple
    meta: dict = field(repr=False)
    steps: tuple = ()  # what was done to the shipped flux, in order

    @property
    def cadence_min(self) -> float:
        return float(np.median(np.diff(self.t)) * 1440)


@functools.lru_cache(maxsize=None)
def _planets_json():
    return json.loads((DATA / "planets.json").read_text())


def planets(name):
    """The known planets of light curve ``name`` (tuple of ``Planet``)."""
    _check(name)
    return tuple(
        Planet(
            name=p["name"], period=p["period_days"], t0=p["t0_first_in_data_native"],
            duration=p["duration_hours"] / 24, depth_ppm=p["depth_ppm"],
            snr=p["check_in_this_lc"]["snr"],
        )
        for p in _planets_json()["lightcurves"][name]
    )


def _check(name):
    if name not in REAL_NAMES:
        raise ValueError(f"unknown light curve {name!r}; shipped: {', '.join(REAL_NAMES)}")


def is_detrended(meta) -> bool:
    """Whether the shipped ``flux`` is already flat (the manifest's words)."""
    return meta["detrended"].strip().lower().startswith("yes")


def load(name, *, detrend=True, window=None, bin_minutes=None, mask_planets=False):
    """Shipped light curve ``name``, flattened if raw.

    window: running-median window [d]; default 3x the longest known transit,
    at least ``MIN_WINDOW``. bin_minutes: average into bins of that many
    minutes (after flattening). mask_planets: drop the points within one
    transit duration of each known planet's mid-transits.
    """
    _check(name)
    with np.load(DATA / f"{name}.npz") as f:
        t, y, dy = f["time"], f["flux"], f["flux_err"]
        meta = json.loads(str(f["meta"]))
    known = planets(name)
    lc = RealLightCurve(name=name, mission=meta["mission"], t=t, y=y, dy=dy,
                        planets=known, meta=meta)
    if detrend and not is_detrended(meta):
        if window is None:
            window = max(MIN_WINDOW, 3 * max(p.duration for p in known))
        y, dy = flatten(t, y, dy, window)
        lc = replace(lc, y=y, dy=dy, steps=lc.steps + (f"running median {window:.3g} d",))
    if mask_planets:
        lc = without_planets(lc)
    if bin_minutes:
        t, y, dy = bin_lightcurve(lc.t, lc.y, lc.dy, bin_minutes / 1440)
        lc = replace(lc, t=t, y=y, dy=dy, steps=lc.steps + (f"binned {bin_minutes:g} min",))
    return lc


def in_transit(t, planet, width=2.0):
    """True within ``width`` / 2 transit durations of ``planet``'s mid-transits."""
    from transitleastsquares import transit_mask

    return transit_mask(t, planet.period, width * planet.duration, planet.t0)


def without_planets(lc):
    keep = np.ones(lc.t.size, bool)
    for p in lc.planets:
        keep &= ~in_transit(lc.t, p)
    return replace(lc, t=lc.t[keep], y=lc.y[keep], dy=lc.dy[keep],
                   steps=lc.steps + ("known transits removed",))


@functools.lru_cache(maxsize=None)
def _noise(name, bin_minutes):
    lc = load(name, mask_planets=True, bin_minutes=bin_minutes)
    keep = np.abs(lc.y - np.median(lc.y)) < OUTLIER_SIGMA * robust_sigma(lc.y)
    return replace(lc, t=lc.t[keep], y=lc.y[keep], dy=lc.dy[keep],
                   steps=lc.steps + (f"outliers beyond {OUTLIER_SIGMA:g} sigma removed",))


def noise_window(name, baseline, rng, bin_minutes=None):
    """(t, y, dy): ``baseline`` days of curve ``name``'s noise (flattened, known
    transits and outliers removed, optionally binned) from a random point, its
    flux and errors cyclically shifted by a random number of points and reversed
    half the time, the time stamps kept: one curve gives many different nulls.
    Outliers go because they are instrumental (WASP-75's K2 curve dips up to
    145 sigma in single cadences) and TLS would find them in every window."""
    lc = _noise(name, bin_minutes)
    starts = lc.t[: max(1, np.searchsorted(lc.t, lc.t[-1] - baseline, side="right"))]
    start = starts[rng.integers(starts.size)]
    inside = (lc.t >= start) & (lc.t < start + baseline)
    shift, reverse = int(rng.integers(inside.sum())), bool(rng.integers(2))
    y, dy = (np.roll(a[inside], shift) for a in (lc.y, lc.dy))
    if reverse:
        y, dy = y[::-1], dy[::-1]
    return lc.t[inside], y, dy
