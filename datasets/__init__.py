"""Light curves for the workbench: a seeded synthetic generator with batman
transits (``datasets.synthetic``), the shipped real K2/TESS light curves of
known-planet hosts (``datasets.real``) and the detrending/binning they need
(``datasets.detrend``). Knows nothing of backends."""

from datasets.detrend import bin_lightcurve, flatten
from datasets.real import REAL_NAMES, RealLightCurve, load, planets
from datasets.synthetic import PRESETS, Injection, SyntheticLightCurve, inject, simulate

__all__ = [
    "PRESETS", "REAL_NAMES", "Injection", "RealLightCurve", "SyntheticLightCurve",
    "bin_lightcurve", "flatten", "inject", "load", "planets", "simulate",
]
