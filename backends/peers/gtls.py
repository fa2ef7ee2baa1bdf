"""GTLS (``gputls`` 0.4.4, CuPy): a GPU port of transitleastsquares 1.x, run as
the peer ``peer:gtls``. ``run`` is called in the peer's worker process.

How TLS's ``power()`` options reach it (``arguments``):

* trial periods: TLS's own grid for the options, passed as ``periods``;
* R_star(_min/_max), M_star(_min/_max), n_transits_min, duration_grid_step,
  transit_depth_min, transit_template and the template's per, rp, a, inc, b,
  ecc, w, u, limb_dark: under the same names (GTLS validates them as TLS 1.x);
* T0_fit_margin: TLS 2.0.4's default (0.01) when not given, not GTLS's own
  0.125 (it sets how many phase shifts GTLS's first pass skips);
* oversampling_factor: rounded to an integer, as it only sets GTLS's SDE
  detrending window there (the grid is TLS's): with a non-integer one,
  ``gputls.helpers.running_median`` indexes one past the end (IndexError);
* times: GTLS drops times <= 0 (its ``cleaned_array`` keeps positive values
  only), so a light curve that has them is shifted to start at 1 d and T0
  shifted back;
* dy: as given (GTLS, like TLS, normalises it to mean 1; None: std(y)).

Not matched: GTLS's kernel bounds each period's durations by its own stellar
limits (0.05-4 R_sun, 15 % of the period; ``gputls/GPUFun.py`` lines 8-18),
whatever R_star_min/max say; SDE_detrend and T0_search_margin (TLS 2.x);
use_threads (GTLS runs on the GPU). It gives no FAP.

Outcome: GTLS's period, T0, duration [d], depth (its ``depth`` is the
fractional depth: x 1e6 to ppm), SDE and SNR.
"""

from __future__ import annotations

import warnings

import numpy as np

DEVICE = "gpu"
PACKAGE = "gputls"
PASSED = ("R_star", "R_star_min", "R_star_max", "M_star", "M_star_min", "M_star_max",
          "n_transits_min", "duration_grid_step", "transit_depth_min", "transit_template",
          "per", "rp", "a", "inc", "b", "ecc", "w", "u", "limb_dark", "T0_fit_margin")


def missing():
    from backends.gpu import missing_requirements

    return missing_requirements(("gputls", "cupy", "pynvml", "batman"))


def arguments(periods, options) -> dict:
    """Keywords of GTLS's ``power()`` for TLS's ``options`` and trial ``periods``."""
    from transitleastsquares import tls_constants

    kwargs = {key: options[key] for key in PASSED if key in options}
    kwargs.setdefault("T0_fit_margin", tls_constants.T0_FIT_MARGIN)
    factor = options.get("oversampling_factor", tls_constants.OVERSAMPLING_FACTOR)
    return dict(kwargs, periods=np.sort(periods), oversampling_factor=max(1, round(factor)),
                show_progress_bar=False)


def time_offset(t) -> float:
    """What to subtract from ``t`` so that GTLS keeps every point (0: nothing)."""
    return min(0.0, float(np.min(t)) - 1.0)


def search(t, y, dy, periods, options):
    """GTLS's own results object (``gtlsResult``) for a light curve, and the time
    offset subtracted from ``t``."""
    import gputls

    offset = time_offset(t)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return gputls.gtls(t - offset, y, dy, verbose=False).power(**arguments(periods, options)), offset


def run(t, y, dy, periods, options) -> dict:
    from backends.peers.outcome import number

    result, offset = search(t, y, dy, periods, options)
    return dict(period=number(result.period), t0=number(result.T0) + offset,
                duration=number(result.duration), depth_ppm=number(result.depth) * 1e6,
                sde=number(result.SDE), snr=number(result.snr))
