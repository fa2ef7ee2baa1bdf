"""Benchmark cases: one seeded synthetic light curve per ndata, searched over
about ``nperiods`` trial periods, plus the rules that say which backend runs
which case.

Every case is a 27-day light curve at a regular cadence (ndata points, no
thinning, so that CETRA's regular-cadence search can take it too) with one
limb-darkened transit at P = 3.7 d. The number of trial periods is set with
TLS's own ``oversampling_factor`` so that the end-to-end search and the stage
benchmarks search the same TLS grid.

``TLS_BENCH_SIZES=medium`` (3 x 2 cases) or ``ci`` (the smallest case, CI's
quick CPU run) shrink the sweep; ``TLS_BENCH_WORK_<DEVICE>`` overrides a device's work budget.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass

import numpy as np

SWEEPS = {
    "full": ([500, 2000, 4320, 20000, 100000], [1000, 10000, 100000]),
    "medium": ([500, 4320, 20000], [1000, 10000]),
    "ci": ([500], [1000]),
}
NDATA, NPERIODS = SWEEPS[os.environ.get("TLS_BENCH_SIZES", "full")]

BASELINE = 27.0  # days
INJECTED = dict(period=3.7, t0=1.3, snr=20.0)

# ndata x nperiods a device may be given per timed call: the cpu backend and
# the CPU peers skip what would take minutes (the GPU machine has 16 cores).
WORK_BUDGET = {"cpu": 5e7, "gpu": 1e10}


def work_budget(device: str) -> float:
    return float(os.environ.get(f"TLS_BENCH_WORK_{device.upper()}", WORK_BUDGET[device]))


def require_budget(device: str, ndata: int, nperiods: int) -> None:
    """Skip (asv: NotImplementedError in setup) a case over the device's budget."""
    if ndata * nperiods > work_budget(device):
        raise NotImplementedError(f"{ndata} x {nperiods} is over the {device} work budget")


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
    """A fresh instance of backend ``name`` for this case, or NotImplementedError
    (asv's skip) when it cannot run here, the case is over its budget or the
    backend refuses the light curve (``TLSBackend.refuses``)."""
    import backends

    why = backends.available_backends().get(name, "not registered")
    if why is not None:
        raise NotImplementedError(f"backend {name!r} unavailable: {why}")
    backend = backends.get_backend(name)
    require_budget(backend.device, ndata, nperiods)
    why = backend.refuses(case(ndata, nperiods).plan)
    if why is not None:
        raise NotImplementedError(why)
    return backend


def period_error(found: float, truth: dict) -> float:
    """Relative error of a found period against the injected one."""
    return abs(found - truth["period"]) / truth["period"]
