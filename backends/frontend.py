"""``search``: the workbench's front end. Inputs are cleaned and planned once
(``backends.grids.plan_light_curve``), the backend searches the plan, and
``backends.statistics`` gives TLS's results object from its per-period
statistics, every key under TLS's names, plus ``meta``. TLS's own
``power(backend="bench-<name>")`` runs the same backends (``tls_bridge``)."""

from __future__ import annotations

import functools
import platform
import time

import numpy as np

from backends.interrupts import reraise_interrupt

SEARCH_PACKAGES = ("numpy", "numba", "transitleastsquares", "pycuda", "cupy-cuda12x", "cupy-cuda13x",
                   "numba-cuda")


@functools.lru_cache(maxsize=None)
def versions(packages=SEARCH_PACKAGES) -> dict:
    """Python's and the installed ``packages``' versions (absent ones left
    out), looked up once per process: importlib.metadata takes ~1 ms each."""
    from importlib import metadata

    out = {"python": platform.python_version()}
    for dist in packages:
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            pass
    return out


def search(t, y=None, dy=None, backend="auto", *, lean=False, **tls_options):
    """Run TLS on one light curve with a workbench backend.

    ``t, y, dy``: arrays, astropy Quantity/Time, or one LightCurve-like object
    (``.time``, ``.flux``, ``.flux_err``) as ``t``. ``backend``: a registered
    name, ``"auto"`` (the fastest that can run here, logged and recorded in
    ``meta``) or a ``TLSBackend`` instance. ``lean``: results without
    ``backends.statistics.FOLDED_KEYS`` (model light curves, folded arrays),
    as ``search_batch(lean=True)`` gives them. ``tls_options``: any keyword of
    ``transitleastsquares.power()``; an unknown one, or a search over the size
    limits (``backends.search_size``), is a ValueError before anything is built.

    The light curve's plan (TLS's checks, grids and templates) is made once;
    the backend searches it and ``backends.statistics`` composes ``power()``'s
    results from its per-period statistics, as ``search_batch`` does (TLS's
    own ``power()`` on the plan where only it does what is asked: see
    ``planned_search``).
    Returns TLS's ``transitleastsquaresresults`` with an extra ``meta`` key:
    backend that ran, device, package versions, per-stage timings [s] (``plan``,
    the backend's stages, ``statistics``) and the cleaning report.
    """
    from backends.grids import plan_light_curve

    start = time.perf_counter()
    lc, plan, periods = plan_light_curve(t, y, dy, **tls_options)
    return planned_search(plan, periods, backend, lc.report, time.perf_counter() - start, lean)


def planned_search(plan, periods, backend, cleaning, plan_seconds, lean=False):
    """``search`` of a light curve already planned (``plan_light_curve``:
    ``plan``, ``periods``, its ``cleaning`` report, in ``plan_seconds``).
    Through TLS's own ``power()`` instead where only it does what is asked:
    pre-binning for an approximate backend, its log or progress bar
    (``verbose``, ``show_progress_bar``)."""
    from backends.registry import get_backend
    from backends.statistics import FOLDED_KEYS, tls_results

    start = time.perf_counter()
    chosen = get_backend(backend, plan=plan, ndata=plan.lc.size)
    chosen.timings.clear()  # an instance passed in again reports this search's stages only
    chosen.work.clear()
    searching = time.perf_counter()
    if prebinned(chosen, plan) or talks(plan):
        from backends.tls_bridge import search_backend
        from backends.tls_power import planned_power

        results = planned_power(plan, search_backend(chosen, plan))
        for key in FOLDED_KEYS if lean else ():
            results.pop(key)
    else:
        try:
            results = tls_results(plan, chosen.search(plan, periods), lean)
        except Exception as exc:  # Ctrl-C inside numba code comes out as a SystemError
            reraise_interrupt(exc)
            raise
    end = time.perf_counter()

    stages = dict(chosen.timings)
    timings = stage_timings(stages, plan_seconds, max(0.0, end - searching - stage_seconds(stages)),
                            searching - start)
    results["meta"] = {**backend_meta(chosen, backend), "timings": timings, "cleaning": cleaning}
    if chosen.work:
        from backends.pruning import work_summary

        results["meta"]["work"] = work_summary(chosen.work)
    return results


def stage_seconds(stages) -> float:
    """Seconds of a backend's stages ("stage.part" keys time parts inside a stage)."""
    return sum(v for k, v in stages.items() if "." not in k)


def stage_timings(stages, plan_seconds, statistics_seconds, other_seconds=0.0) -> dict:
    """``meta["timings"]`` [s]: the light curve's ``plan``, the backend's
    ``stages``, the ``statistics`` and the ``total`` of them and
    ``other_seconds`` (choosing the backend)."""
    return {"plan": plan_seconds, **stages, "statistics": statistics_seconds,
            "total": plan_seconds + stage_seconds(stages) + statistics_seconds + other_seconds}


def talks(plan) -> bool:
    """Whether the search asks for TLS's log or progress bar."""
    return any(plan.model.options.get(key) for key in ("verbose", "show_progress_bar"))


def prebinned(backend, plan) -> bool:
    """Whether TLS's ``power()`` pre-bins this light curve for some periods:
    for an approximate ``backend`` only, when the bin TLS would choose at the
    longest period (the shortest duration grows with it) is over one cadence."""
    if backend.exact:
        return False
    from transitleastsquares import binning

    model = plan.model
    longest = [np.max(model.grid.periods)]
    return bool(binning.bin_factors(longest, binning.cadence(model.t), plan.R_star_min, plan.M_short,
                                    binning.bin_fraction())[0] > 1)


def backend_meta(backend, requested) -> dict:
    """What ``results.meta`` says of the backend that ran, asked for as
    ``requested`` (a name, or the instance itself): the same for every light
    curve it searches."""
    return {
        "backend": backend.name,
        "requested_backend": requested if isinstance(requested, str) else backend.name,
        "auto_table": auto_table() if requested == "auto" else None,
        "exact": backend.exact,
        "device": device_name(backend),
        "versions": dict(versions()),  # looked up once per process (~8 ms each time)
    }


def auto_table() -> str:
    """Which variant table ``auto`` followed here: a GPU model's, or the default order."""
    from backends.variants import followed_table

    table = followed_table()
    return table["gpu"] if table else "default order"


def device_name(backend) -> str:
    name = getattr(backend, "device_name", None)
    if callable(name):
        return name()
    return f"CPU: {platform.processor() or platform.machine()}"
