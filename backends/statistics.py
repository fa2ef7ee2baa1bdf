"""TLS's spectra and statistics of a light curve from its backend's
per-period results, without ``power()``'s per-curve overhead.

The values are those of transitleastsquares 2.0.4's ``power()``: its
``_results`` and ``_detection_statistics``, composed again here from TLS's
own functions, on the grids, templates and options of each light curve's plan
(``backends.grids.make_plan``), which are not built again. Four parts run
faster than TLS's, with its values: the SDE detrend's running median
(``backends.running_median``), the final T0 fit's
trials summed side by side (``backends.t0_fit``), the per-transit
statistics every transit at once (``backends.transit_stats``), and the model
light curves' reference transit, built once per length and template
(``reference_flux``).
``lean`` leaves out the model light curves and the folded arrays: half the
cost, and nothing a survey's table holds. ``tests/test_statistics.py`` holds
both equal to ``power()``'s results.
"""

from __future__ import annotations

import warnings

import numpy as np
from transitleastsquares import stats as tls
from transitleastsquares import tls_constants
from transitleastsquares.backends import SearchResult
from transitleastsquares.core import fold
from transitleastsquares.main import _NO_FIT_RESULTS, DEGREES_OF_FREEDOM
from transitleastsquares.results import transitleastsquaresresults
from transitleastsquares.transit import fractional_transit, reference_transit

from backends import transit_stats
from backends.bounded_cache import BoundedCache
from backends.running_median import running_median
from backends.t0_fit import final_T0_fit

FOLDED_KEYS = ("model_lightcurve_time", "model_lightcurve_model", "model_folded_phase",
               "folded_y", "folded_dy", "folded_phase", "model_folded_model")  # not in lean results
NO_FIT_WARNING = 'No transit were fit. Try smaller "transit_depth_min"'  # TLS's words
REFERENCE_TRANSITS = BoundedCache(maxsize=32)  # (samples, template) -> TLS's reference_transit
REFERENCE_MAX_SAMPLES = 100_000  # larger ones are built each time: 32 of them would hold 25 MB


def tls_results(plan, stats, lean=False):
    """TLS's results object of a plan from its backend's ``PeriodStats`` over
    the plan's period grid (in the grid's order), as ``power()`` gives it;
    ``lean``: without ``FOLDED_KEYS``."""
    found = sorted_by_period(plan.model.grid, stats)
    return results(plan.model, found, None if no_transit_fit(found) else spectra(found, plan.model), lean)


def sorted_by_period(grid, stats) -> SearchResult:
    """TLS's ``SearchResult`` (ascending periods) of per-period statistics in grid order."""
    if stats.chi2.size != grid.periods.size:
        raise ValueError(f"{stats.chi2.size} per-period results for a grid of {grid.periods.size} periods")
    order = grid.ascending
    return SearchResult(grid.periods[order], stats.chi2[order], stats.rows[order], stats.depths[order])


def no_transit_fit(found) -> bool:
    """TLS's test: no period fit a transit (or every chi2 is the same)."""
    return bool((found.depths == 0).all() or found.chi2.max() == found.chi2.min())


def results(model, found, spectrum, lean=False):
    """``power()``'s results object (TLS's ``_results``) from the search's
    ``found`` and its ``spectrum`` (``spectra``'s; None: no transit fit)."""
    chi2 = found.chi2
    chi2red = chi2 / (len(model.t) - DEGREES_OF_FREEDOM)
    r = dict(chi2_min=chi2.min(), chi2red_min=chi2red.min(), periods=found.periods, chi2=chi2,
             chi2red=chi2red)
    if spectrum is None:
        warnings.warn(NO_FIT_WARNING)
        r.update(_NO_FIT_RESULTS)
        r.update(power=np.zeros(len(chi2)), power_raw=np.zeros(len(chi2)))
    else:
        r.update(detection_statistics(model, found, spectrum, lean))
    r["period_uncertainty"] = tls.period_uncertainty(found.periods, r["power"])
    r["FAP"] = tls.FAP(r["SDE"])
    if lean:
        for key in FOLDED_KEYS:
            r.pop(key, None)
    return transitleastsquaresresults(**r)


# ---- spectra -------------------------------------------------------------------------------

def spectra(found, model) -> tuple:
    """TLS's ``stats.spectra`` (SR, power_raw, power, SDE_raw, SDE) of a
    search result with its model's options; a "median" detrend's running
    median by ``backends.running_median``, any other detrend (or a power with
    NaN) by TLS."""
    SR, power_raw, SDE_raw = _raw_power(found.chi2)
    kernel = tls._sde_kernel(model.oversampling_factor)
    if model.SDE_detrend == "median" and power_raw.size > 2 * kernel and not np.isnan(power_raw).any():
        trend = running_median(power_raw, kernel)
    else:
        trend = tls.sde_trend(power_raw, found.periods, model.oversampling_factor, model.SDE_detrend)
    return (SR, power_raw, *_detrended(power_raw, SDE_raw, trend))


def _raw_power(chi2):
    """(SR, power_raw, SDE_raw) as ``stats.spectra`` forms them."""
    SR = chi2.min() / chi2
    mean, std = transit_stats.mean_and_std(SR)
    SDE_raw = (1 - mean) / std
    power_raw = SR - mean  # shift down to the mean being zero
    scale = SDE_raw / power_raw.max()  # scale factor to touch max=SDE_raw
    return SR, power_raw * scale, SDE_raw


def _detrended(power_raw, SDE_raw, trend):
    """(power, SDE_raw, SDE) as ``stats.spectra`` forms them from a trend (None: none)."""
    if trend is None:
        return power_raw, SDE_raw, SDE_raw
    power = power_raw - trend
    power = power - transit_stats.mean_and_std(power)[0]
    SDE = (power / transit_stats.mean_and_std(power)[1]).max()
    scale = SDE / power.max()
    return power * scale, SDE_raw, SDE


# ---- the statistics at the best period -----------------------------------------------------

def detection_statistics(model, found, spectrum, lean=False) -> dict:
    """TLS's ``_detection_statistics`` from the ``spectrum``: the statistics at
    the highest power (``lean``: without the model light curves and the folded arrays)."""
    t, y, dy = model.t, model.y, model.dy
    SR, power_raw, power, SDE_raw, SDE = spectrum
    index = power.argmax()
    period, depth, best_row = found.periods[index], found.depths[index], found.rows[index]
    duration = model.cache.overview["duration"][best_row]
    T0 = final_T0_fit(model.cache.lc_arr[best_row], depth, t, y, dy, period, model.T0_fit_margin)
    transit_times = tls.all_transit_times(T0, t, period)
    duration_days = tls.calculate_transit_duration_in_days(t, period, transit_times, duration)
    r = {} if lean else _folded(model, period, T0, depth, duration, transit_times)
    flux_ootr = transit_stats.out_of_transit(t, y, period, 2 * duration_days, T0)

    (depth_mean_odd, depth_mean_even, depth_mean_odd_std, depth_mean_even_std, all_flux_intransit_odd,
     all_flux_intransit_even, per_transit_count, transit_depths, transit_depths_uncertainties,
     snr_per_transit, snr_pink_per_transit, in_transit_count, after_transit_count,
     before_transit_count) = _per_transit(t, y, period, T0, transit_times, duration_days, flux_ootr)
    all_flux_intransit = np.concatenate([all_flux_intransit_odd, all_flux_intransit_even])
    depth_mean, depth_std = transit_stats.mean_and_std(all_flux_intransit)
    depth_mean_std = depth_std / per_transit_count.sum() ** 0.5
    snr = ((1 - depth_mean) / transit_stats.mean_and_std(flux_ootr)[1]) * len(all_flux_intransit) ** 0.5
    odd_even_mismatch = abs(depth_mean_odd - depth_mean_even) / (depth_mean_odd_std + depth_mean_even_std)
    transit_count = len(transit_times)
    empty_transit_count = np.count_nonzero(per_transit_count == 0)
    if empty_transit_count / transit_count >= 0.33:
        warnings.warn(f"{empty_transit_count} of {transit_count} transits without data. "
                      "The true period may be twice the given period.")
    return dict(
        SDE=SDE, SDE_raw=SDE_raw, period=period, T0=T0, duration=duration_days, depth=depth,
        depth_mean=(depth_mean, depth_mean_std), depth_mean_even=(depth_mean_even, depth_mean_even_std),
        depth_mean_odd=(depth_mean_odd, depth_mean_odd_std), transit_depths=transit_depths,
        transit_depths_uncertainties=transit_depths_uncertainties,
        rp_rs=tls.rp_rs_from_depth(depth=1 - depth, law=model.limb_dark, params=model.u),
        snr=snr, snr_per_transit=snr_per_transit, snr_pink_per_transit=snr_pink_per_transit,
        odd_even_mismatch=odd_even_mismatch, transit_times=transit_times,
        per_transit_count=per_transit_count, transit_count=transit_count,
        distinct_transit_count=transit_count - empty_transit_count, empty_transit_count=empty_transit_count,
        in_transit_count=in_transit_count, after_transit_count=after_transit_count,
        before_transit_count=before_transit_count, power=power, power_raw=power_raw, SR=SR, **r)


def _per_transit(t, y, period, T0, transit_times, duration, flux_ootr) -> tuple:
    """TLS's ``intransit_stats``, ``snr_stats`` and ``count_stats``, in one
    tuple: every transit at once (``backends.transit_stats``) where ``t`` is
    sorted (as ``backends.inputs.clean`` leaves it), else TLS's own loops."""
    if not tls._is_sorted(t):
        inside = tls.intransit_stats(t, y, transit_times, duration)
        return (*inside, *tls.snr_stats(t=t, y=y, period=period, duration=duration, T0=T0,
                                         transit_times=transit_times, transit_duration_in_days=duration,
                                         per_transit_count=inside[6]),
                *tls.count_stats(t, y, transit_times, duration))
    inside = transit_stats.intransit_stats(t, y, transit_times, duration)
    return (*inside, *transit_stats.snr_stats(flux_ootr, inside[6], inside[7]),
            *transit_stats.count_stats(t, transit_times, duration))


def _folded(model, period, T0, depth, duration, transit_times) -> dict:
    """The model light curves and the folded data (mid-transit at phase 0.5), as TLS makes them."""
    t, y, dy = model.t, model.y, model.dy
    phases = fold(t, period, T0=T0 + period / 2)
    sort_index = np.argsort(phases)
    model_folded_phase = np.linspace(0 + 1 / np.size(t) / 2, 1 + 1 / np.size(t) / 2, np.size(t))
    maxwidth_in_samples = int(np.max(model.grid.durations) * np.size(t))  # not rounded up to even
    stretch = tls.calculate_stretch(t, period, transit_times)
    internal_samples = (int(len(y) / len(transit_times))) * tls_constants.OVERSAMPLE_MODEL_LIGHT_CURVE
    template = model._template_params()
    shape = dict(duration=duration * maxwidth_in_samples, maxwidth=maxwidth_in_samples / stretch,
                 depth=1 - depth, **template)
    model_folded_model = fractional_transit(samples=int(len(t)), **shape,
                                            cached_reference_transit=reference_flux(int(len(t)), template))
    model_transit_single = fractional_transit(samples=internal_samples, **shape,
                                              cached_reference_transit=reference_flux(internal_samples, template))
    model_lightcurve_model, model_lightcurve_time = _model_lightcurve(transit_times, period, t,
                                                                      model_transit_single)
    return dict(model_lightcurve_time=model_lightcurve_time, model_lightcurve_model=model_lightcurve_model,
                model_folded_phase=model_folded_phase, folded_y=y[sort_index], folded_dy=dy[sort_index],
                folded_phase=phases[sort_index], model_folded_model=model_folded_model)


def reference_flux(samples, template):
    """TLS's ``reference_transit`` of ``samples`` points for the template
    parameters ``template`` (``_template_params``), built once for each pair
    up to REFERENCE_MAX_SAMPLES (~0.1 ms a K2-size build, twice per full
    results object; a survey's light curves have few lengths and transit
    counts). Read-only: every results object shares it."""
    def build():
        flux = reference_transit(samples=samples, **template)
        flux.flags.writeable = False
        return flux

    if samples > REFERENCE_MAX_SAMPLES:
        return reference_transit(samples=samples, **template)
    key = (samples, *((k, tuple(np.ravel(v).tolist()) if np.ndim(v) else v) for k, v in sorted(template.items())))
    return REFERENCE_TRANSITS.get(key, build)


def _model_lightcurve(transit_times, period, t, model_transit_single):
    """TLS's ``stats.model_lightcurve``: its per-transit ``np.linspace`` in
    one call over all transits (the same values: linspace is elementwise),
    ~10x faster with 80 transits."""
    extended = np.concatenate([[transit_times[0] - period], transit_times, [transit_times[-1] + period]])
    internal_samples = int(len(t) / len(transit_times)) * tls_constants.OVERSAMPLE_MODEL_LIGHT_CURVE
    x = np.linspace(extended - period / 2, extended + period / 2, internal_samples, axis=-1).ravel()
    if np.all(np.isnan(x)):
        return None, None
    start, stop = np.nanargmax(x > np.min(t)), np.nanargmax(x > np.max(t))
    return np.tile(model_transit_single, len(extended))[start:stop], x[start:stop]
