"""Benchmark cases: one seeded synthetic light curve per ndata, searched over
about ``nperiods`` trial periods, plus the rules that say which backend runs
which case.

Every case is a 27-day light curve at a regular cadence (ndata points, no
thinning, so that CETRA's regular-cadence search can take it too) with one
limb-darkened transit at P = 3.7 d. The number of trial periods is set with
TLS's own ``oversampling_factor`` so that the end-to-end search and the stage
benchmarks search the same TLS grid.

``TLS_BENCH_SIZES=medium`` (3 x 2 cases) or ``ci`` (the smallest case, CI's
quick CPU run) shrink the sweep; ``TLS_BENCH_WORK_<NAME>`` overrides the work
budget of a backend or peer, ``TLS_BENCH_WORK_<DEVICE>`` that of a device.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass

import numpy as np

SWEEPS = {
    "full": ([500, 2000, 4320, 20000, 100000], [1000, 10000, 100000]),
    "medium": ([500, 4320, 20000], [1000, 10000]),
    "ci": ([500, 2000], [1000]),
}
NDATA, NPERIODS = SWEEPS[os.environ.get("TLS_BENCH_SIZES", "full")]

BASELINE = 27.0  # days
INJECTED = dict(period=3.7, t0=1.3, snr=20.0)

# ndata x nperiods one timed call may get, so that the whole sweep fits one
# 10-minute device call (H200 + 16 cores; reports/asv/README.md): a device's
# budget, or a backend's own where it is much faster than its device's others.
# 100,000 x 100,000 runs in scripts/big_search.py instead. CETRA's whole sweep at
# the gpu budget ran past 90 s on the H200 (2026-11-22): it gets the cpu one.
WORK_BUDGET = {"cpu": 5e7, "gpu": 2e8, "simple": 1e9, "thrust": 1e9, "cetra": 5e7}


def work_budget(device: str, name: str = "") -> tuple[str, float]:
    """(whose, budget): backend or peer ``name``'s own budget where it has one,
    else its device's; ``TLS_BENCH_WORK_<WHOSE>`` overrides either."""
    for key in (name, device):
        env = f"TLS_BENCH_WORK_{key.upper().replace('-', '_')}"
        if key and (env in os.environ or key in WORK_BUDGET):
            return key, float(os.environ.get(env, WORK_BUDGET.get(key, 0.0)))
    raise KeyError(device)


def require_budget(device: str, ndata: int, nperiods: int, name: str = "") -> None:
    """Skip (asv: NotImplementedError in setup) a case over the budget."""
    whose, budget = work_budget(device, name)
    if ndata * nperiods > budget:
        raise NotImplementedError(f"{ndata} x {nperiods} is over the {whose} work budget ({budget:.3g})")


@dataclass(frozen=True)
class Case:
    """A light curve, the TLS options that give about ``nperiods`` periods,
    and the resulting plan and period grid (exactly ``nperiods`` long or the
    whole grid when it is shorter)."""

    t: np.ndarray
    y: np.ndarray
    dy: np.ndarray
    truth: dict
    options: dict
    plan: object
    periods: np.ndarray


def light_curve(ndata: int, seed: int = 0):
    from datasets import simulate

    cadence_min = BASELINE * 1440.0 / ndata
    return simulate(seed, "tess", baseline=BASELINE, cadence_min=cadence_min, gaps=(),
                    noise_ppm=300.0, **INJECTED)


def tls_options(t, nperiods: int) -> dict:
    """``power()`` options whose period grid has about 1 % more than ``nperiods`` periods."""
    from backends.grids import period_grid

    per_unit = period_grid(float(t.max() - t.min()), oversampling_factor=1).size
    return {"oversampling_factor": 1.01 * nperiods / per_unit, "use_threads": os.cpu_count()}


@functools.lru_cache(maxsize=2)
def case(ndata: int, nperiods: int) -> Case:
    import backends

    lc = light_curve(ndata)
    options = tls_options(lc.t, nperiods)
    plan, periods = backends.make_plan(lc.t, lc.y, lc.dy, **options)
    return Case(lc.t, lc.y, lc.dy, lc.truth, options, plan, periods[:nperiods])


def runnable_backend(name: str, ndata: int, nperiods: int):
    """The thread's instance of backend ``name`` for this case, or NotImplementedError
    (asv's skip) when it cannot run here, the case is over its budget or the
    backend refuses the light curve (``TLSBackend.refuses``)."""
    import backends

    why = backends.available_backends().get(name, "not registered")
    if why is not None:
        raise NotImplementedError(f"backend {name!r} unavailable: {why}")
    backend = backends.get_backend(name)
    require_budget(backend.device, ndata, nperiods, name)
    why = backend.refuses(case(ndata, nperiods).plan)
    if why is not None:
        raise NotImplementedError(why)
    return backend


def period_error(found: float, truth: dict) -> float:
    """Relative error of a found period against the injected one."""
    return abs(found - truth["period"]) / truth["period"]


def outcome(fn):
    """``fn()``, or the exception to report for it in asv (``setup_cache``
    results must pickle): a skip (NotImplementedError) as it is, any other
    error as a RuntimeError naming it."""
    try:
        return fn()
    except NotImplementedError as skip:
        return skip
    except Exception as error:
        return RuntimeError(f"{type(error).__name__}: {error}")


def reported(value):
    """The value an ``outcome`` holds; raises the exception it holds (in asv's
    ``setup``: a skip or a failure of that benchmark)."""
    if isinstance(value, Exception):
        raise value
    return value
