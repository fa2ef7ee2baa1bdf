"""The peers a TLS user would otherwise pick, each run on a benchmark case and
reduced to the period it finds (its correctness is that period's error).

CPU transitleastsquares (its default backend and its exact ``fused`` one),
GTLS (``gputls``, CuPy), CETRA (PyCUDA; its own statistic) and astropy's
BoxLeastSquares. Each peer says why it cannot run here instead of failing.
"""

from __future__ import annotations

import importlib.util
import warnings

import numpy as np

# name -> (device, Python package it needs)
PEERS = {
    "tls-default": ("cpu", "transitleastsquares"),
    "tls-fused": ("cpu", "transitleastsquares"),
    "gtls": ("gpu", "gputls"),
    "cetra": ("gpu", "cetra"),
    "bls": ("cpu", "astropy"),
}


def missing(name: str):
    """Why peer ``name`` cannot run here, or None."""
    from backends.gpu import cuda_device_count

    device, package = PEERS[name]
    if importlib.util.find_spec(package) is None:
        return f"Python package '{package}' is not installed"
    if device == "gpu" and cuda_device_count() == 0:
        return "no CUDA GPU"
    return None


def _tls(case, backend):
    """``backend`` None: TLS's default; its worker pool kept between calls, as a user has it."""
    from backends.tls_power import power

    return power(case.t, case.y, case.dy, backend=backend, persistent_pool=True, **case.options).period


def _gtls(case):
    import gputls

    options = {k: v for k, v in case.options.items() if k != "use_threads"}
    return gputls.gtls(case.t, case.y, case.dy, verbose=False).power(
        show_progress_bar=False, **options).period


def _cetra(case):
    import cetra

    lc = cetra.LightCurve(case.t, case.y, case.dy, verbose=False)
    detector = cetra.TransitDetector(lc, verbose=False)
    detector.linear_search(verbose=False)
    found = detector.period_search(periods=np.sort(case.periods), verbose=False)
    return found.get_max_snr_parameters().period


def _bls(case):
    from astropy.timeseries import BoxLeastSquares

    periods = np.sort(case.periods)
    durations = np.geomspace(0.02, min(0.3, 0.5 * periods[0]), 12)
    power = BoxLeastSquares(case.t, case.y, case.dy).power(periods, durations)
    return float(power.period[np.argmax(power.power)])


def run(name: str, case) -> float:
    """Best period [d] that peer ``name`` finds on ``case``."""
    runners = {
        "tls-default": lambda c: _tls(c, None),
        "tls-fused": lambda c: _tls(c, "fused"),
        "gtls": _gtls,
        "cetra": _cetra,
        "bls": _bls,
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(runners[name](case))
