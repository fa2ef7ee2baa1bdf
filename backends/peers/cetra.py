"""CETRA (``cetra`` 1.0, PyCUDA): a likelihood-ratio search of its own, a
linear search over (T0, duration) and then a periodic one, run as the peer
``peer:cetra``. ``run`` is called in the peer's worker process, which is
where ``import cetra`` creates its CUDA context (``pycuda.autoinit``).

How TLS's ``power()`` options reach it:

* trial periods: TLS's own grid for the options (``period_search(periods=)``);
* durations: from TLS's shortest (``T14`` of R_star_min, M_star_min at the
  shortest period, small planet) to its longest (R_star_max, M_star_max, a
  2 R_jup planet, at the longest period), in steps of duration_grid_step;
  per period, CETRA keeps those TLS would (the same stellar limits, at most
  12 % of the period);
* transit_template: "default" is CETRA's b = 0.32 model (TLS's default
  template has b = 0.32 and the same limb darkening), "grazing" its b = 0.99
  one; "box" and the template's own parameters (per, rp, a, inc, b, ecc, w,
  u, limb_dark) cannot be matched: a ValueError;
* dy: as given; None: std(y) for every point, TLS's convention (CETRA needs
  errors).

Not matched: transit_depth_min (CETRA keeps any depth), T0_fit_margin and
T0_search_margin (CETRA steps T0 by 1 % of the shortest duration),
SDE_detrend, use_threads. CETRA resamples the light curve to its modal
cadence and does not detrend it here (its ``get_trend`` is not called: the
input is flattened as for TLS).

Outcome: the maximum-likelihood period (TLS, too, takes the best fit of its
chi2), its T0, duration [d], depth (fractional: x 1e6 to ppm) and SNR =
depth / its standard error. CETRA has no SDE: ``sde`` is that of its
log-likelihood-ratio periodogram, (max - mean) / std over the periods it
could test, which is TLS's SDE_raw for a chi2 periodogram (TLS's reported
SDE is median-detrended). No FAP.
"""

from __future__ import annotations

import numpy as np

DEVICE = "gpu"
PACKAGE = "cetra"
MODELS = {"default": "b32", "grazing": "b99"}
TEMPLATE_PARAMETERS = ("per", "rp", "a", "inc", "b", "ecc", "w", "u", "limb_dark")


def missing():
    from backends.gpu import missing_requirements

    return missing_requirements(("cetra", "pycuda", "scipy"))


def settings(periods, options) -> dict:
    """CETRA's stellar limits, duration range and transit model for TLS's ``options``."""
    from transitleastsquares import tls_constants
    from transitleastsquares.grid import T14

    template = options.get("transit_template", "default")
    unmatched = [f"transit_template={template!r}"] * (template not in MODELS)
    unmatched += [key for key in TEMPLATE_PARAMETERS if key in options]
    if unmatched:
        raise ValueError(f"CETRA cannot match TLS's {', '.join(unmatched)}: its transit models are "
                         "fixed (impact parameter 0.32, 0.93 or 0.99, TLS's default limb darkening)")
    limits = dict(min_star_radius=options.get("R_star_min", tls_constants.R_STAR_MIN),
                  max_star_radius=options.get("R_star_max", tls_constants.R_STAR_MAX),
                  min_star_mass=options.get("M_star_min", tls_constants.M_STAR_MIN),
                  max_star_mass=options.get("M_star_max", tls_constants.M_STAR_MAX))
    shortest, longest = float(np.min(periods)), float(np.max(periods))
    durations = dict(
        min_duration=shortest * T14(limits["min_star_radius"], limits["min_star_mass"], shortest, small=True),
        max_duration=longest * T14(limits["max_star_radius"], limits["max_star_mass"], longest),
        duration_log_step=options.get("duration_grid_step", tls_constants.DURATION_GRID_STEP))
    return dict(limits=limits, durations=durations, model=MODELS[template],
                max_duration_fraction=tls_constants.FRACTIONAL_TRANSIT_DURATION_MAX)


def search(t, y, dy, periods, options):
    """CETRA's own ``PeriodicResult`` for a light curve."""
    import cetra

    chosen = settings(periods, options)
    dy = np.full(t.size, np.std(y)) if dy is None else dy
    lc = cetra.LightCurve(t, y, dy, verbose=False)
    detector = cetra.TransitDetector(lc, transit_model=cetra.TransitModel(chosen["model"], verbose=False),
                                     verbose=False, **chosen["durations"])
    detector.linear_search(verbose=False)
    return detector.period_search(periods=periods, random_order=False, verbose=False,
                                  max_duration_fraction=chosen["max_duration_fraction"], **chosen["limits"])


def run(t, y, dy, periods, options) -> dict:
    from backends.peers.outcome import number

    result = search(t, y, dy, periods, options)
    best = result.get_max_likelihood_parameters()
    ratio = result.like_ratio_array
    return dict(period=number(best.period), t0=number(best.t0), duration=number(best.duration),
                depth_ppm=number(best.depth) * 1e6, snr=number(best.depth / best.depth_error),
                sde=number((np.nanmax(ratio) - np.nanmean(ratio)) / np.nanstd(ratio)))
