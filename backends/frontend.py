"""``search``: the workbench's front end. Inputs are cleaned once
(``backends.inputs``), the search runs through transitleastsquares' own
``power()`` with our backend plugged into its registry, and the result is
TLS's results object, every key under TLS's names, plus ``meta``."""

from __future__ import annotations

import functools
import platform
import time



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


def search(t, y=None, dy=None, backend="auto", **tls_options):
    """Run TLS on one light curve with a workbench backend.

    ``t, y, dy``: arrays, astropy Quantity/Time, or one LightCurve-like object
    (``.time``, ``.flux``, ``.flux_err``) as ``t``. ``backend``: a registered
    name, ``"auto"`` (the fastest that can run here, logged and recorded in
    ``meta``) or a ``TLSBackend`` instance. ``tls_options``: any keyword of
    ``transitleastsquares.power()``; an unknown one, or a search over the size
    limits (``backends.search_size``), is a ValueError before anything is built.

    The light curve's plan (TLS's checks, grids and templates) is made once and
    handed through ``power()``, which searches and computes the statistics.
    Returns TLS's ``transitleastsquaresresults`` with an extra ``meta`` key:
    backend that ran, device, package versions, per-stage timings [s] (``plan``,
    the backend's stages, ``statistics``: the rest of ``power()``) and the
    cleaning report.
    """
    from backends.grids import plan_light_curve
    from backends.registry import get_backend
    from backends.tls_bridge import search_backend
    from backends.tls_power import planned_power

    start = time.perf_counter()
    lc, plan, _ = plan_light_curve(t, y, dy, **tls_options)
    planned = time.perf_counter()
    chosen = get_backend(backend, plan=plan, ndata=lc.t.size)
    chosen.timings.clear()  # an instance passed in again reports this search's stages only
    chosen.work.clear()

    searching = time.perf_counter()
    results = planned_power(plan, search_backend(chosen, plan))
    end = time.perf_counter()

    stages = dict(chosen.timings)
    top = sum(v for k, v in stages.items() if "." not in k)  # "stage.part": inside a stage
    stages.update(plan=planned - start, statistics=max(0.0, end - searching - top), total=end - start)
    results["meta"] = {**backend_meta(chosen, backend), "timings": stages, "cleaning": lc.report}
    if chosen.work:
        from backends.pruning import work_summary

        results["meta"]["work"] = work_summary(chosen.work)
    return results


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
