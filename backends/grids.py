"""Stages 1-3 (period grid, duration grid, template cache) and the host plan of
a light curve, shared by every backend and taken from transitleastsquares
itself so that all backends search exactly what TLS 2.0.4 searches."""

from __future__ import annotations

import warnings

import numpy as np

from backends.plan import Plan, Templates


def tls_model(t, y, dy=None, **options):
    """TLS's own model of a light curve with ``power()`` options validated and
    defaults filled in, as power() sets it up (its cleaning included)."""
    from transitleastsquares import transitleastsquares
    from transitleastsquares.validate import validate_args

    model = transitleastsquares(t, y, dy, verbose=False)
    options = {"verbose": False, "show_progress_bar": False, **options}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, _ = validate_args(model, options)
    return model


def trial_periods(t, y, dy=None, **options) -> np.ndarray:
    """TLS's trial periods [d] for a cleaned light curve and ``power()``
    options, in TLS's order: what a peer searches."""
    return np.asarray(tls_model(t, y, dy, **options)._grids()[0])


def make_plan(t, y, dy=None, **options):
    """(Plan, periods) for a light curve (cleaned) and ``power()`` options:
    what ``power()`` would hand a backend, made once (TLS's checks; grids and
    templates from the caches of ``backends.tls_model``). The plan's ``model``
    gives ``power()`` and the statistics the same grids and templates."""
    from backends.tls_model import PlannedModel

    return _planned(PlannedModel(t, y, dy, options))


def _planned(model):
    """(Plan, periods) of a ``backends.tls_model.PlannedModel``."""
    plan = Plan.from_tls_problem(model.problem, model.cache.templates, model)
    return plan, model.grid.periods


def checked_light_curve(t, y=None, dy=None, **options):
    """Raw input unpacked and cleaned (``backends.inputs``) and checked against
    the search limits for ``power()`` ``options``, before any grid is built."""
    from backends import inputs

    lc = inputs.clean(*inputs.unpack(t, y, dy))
    inputs.check_search(lc.t, options)
    return lc


def plan_light_curve(t, y=None, dy=None, **options):
    """(cleaned light curve, plan, periods) of raw input, as every search makes
    them: ``checked_light_curve``, then planned as ``make_plan`` plans, without
    TLS's cleaning again."""
    from backends.tls_model import PlannedModel

    lc = checked_light_curve(t, y, dy, **options)
    return (lc, *_planned(PlannedModel(lc.t, lc.y, lc.dy, options, cleaned=True)))


def period_grid(time_span, R_star=1.0, M_star=1.0, period_min=0, period_max=float("inf"),
                oversampling_factor=3, n_transits_min=2):
    """TLS's Ofir (2014) period grid [d], descending."""
    from transitleastsquares.grid import period_grid as tls_period_grid

    return np.asarray(tls_period_grid(
        R_star=R_star, M_star=M_star, time_span=time_span, period_min=period_min,
        period_max=period_max, oversampling_factor=oversampling_factor,
        n_transits_min=n_transits_min,
    ))


def duration_grid(periods, duration_grid_step=1.1, R_star_min=0.13, R_star_max=3.5,
                  M_star_min=0.1, M_star_max=1.0):
    """TLS's geometric duration grid, as fractions of the period."""
    from transitleastsquares.grid import duration_grid as tls_duration_grid

    return np.asarray(tls_duration_grid(
        periods, shortest=None, log_step=duration_grid_step, R_star_min=R_star_min,
        R_star_max=R_star_max, M_star_min=M_star_min, M_star_max=M_star_max,
    ))


def template_cache(durations, n_points, T0_search_margin=0.01, transit_depth_min=10e-6,
                   **template) -> Templates:
    """TLS's template cache for ``n_points`` folded samples, one entry per unique width.
    ``template`` takes TLS's shape keywords (per, rp, a, inc, ecc, w, u, limb_dark)."""
    from transitleastsquares import tls_constants
    from transitleastsquares.transit import get_cache

    shape = dict(
        per=tls_constants.DEFAULT_PERIOD, rp=tls_constants.DEFAULT_RP,
        a=tls_constants.DEFAULT_A, inc=tls_constants.DEFAULT_INC,
        ecc=tls_constants.DEFAULT_ECC, w=tls_constants.DEFAULT_W,
        u=tls_constants.DEFAULT_U, limb_dark=tls_constants.DEFAULT_LIMB_DARK,
    )
    shape.update(template)
    maxwidth = int(np.max(durations) * n_points)
    maxwidth += maxwidth % 2
    overview, lc_arr = get_cache(durations=durations, maxwidth_in_samples=maxwidth,
                                 verbose=False, **shape)
    return Templates.from_cache(overview, lc_arr, T0_search_margin, transit_depth_min)
