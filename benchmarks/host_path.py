"""The host's part of many light curves' searches, measured alone.

K2-like light curves (``k2_like``) get their per-period statistics from a
backend beforehand; ``Replay`` hands them to ``search_batch`` in no time, so
what is left of a ``search_batch`` is the host's work per light curve:
cleaning, the plan (grids and templates from their caches), TLS's statistics
and results objects. Its CPU time per light curve is the figure the host
path is held to (``HOST_TARGET_S``); ``scripts/throughput.py`` and the asv
``track_*`` benchmarks (``bench_host``) report it, with ``cpu_probe_us`` and
``python_probe_us``: how fast the machine's cores ran compiled and interpreted
code at the time, since cloud cores change speed by ~1.6x from one second to
the next (reports/host_path/2026-11-27g_H200) and machines differ in the two.
"""

from __future__ import annotations

import statistics
import time

import numpy as np
from transitleastsquares import tls_constants
from transitleastsquares.stats import _sde_kernel

import backends
from backends.grids import plan_light_curve
from backends.running_median import running_median

HOST_TARGET_S = 2e-3  # host seconds per K2-like light curve, one process (issue 13)
PROBE_SPECTRUM = np.random.default_rng(1).normal(size=9679)  # a K2-like spectrum's length
PROBE_KERNEL = _sde_kernel(tls_constants.OVERSAMPLING_FACTOR)  # its SDE detrend's kernel, as spectra() takes it
PROBE_SMALL = np.linspace(0.0, 1.0, 16)


def k2_like(n: int) -> list:
    """``n`` seeded K2-like light curves (t, y, dy): 90 d at 29.4 min from BKJD
    3000, baselines 90 d down to 86.4 d, so lengths and grids differ a little."""
    from datasets import synthetic

    curves = []
    for k in range(n):
        lc = synthetic.simulate(seed=k, preset="k2", baseline=90.0 * (1 - 0.01 * (k % 5)), start=3000.0)
        curves.append((lc.t, lc.y, lc.dy))
    return curves


def plans_of(curves, options) -> list:
    """(plan, periods) of each light curve, as ``search_batch`` makes them."""
    return [plan_light_curve(t, y, dy, **options)[1:] for t, y, dy in curves]


def _key(plan) -> tuple:
    """Which seeded curve a plan is: its length and first and last fluxes (a
    hash of all of them cost ~55 us per curve inside the measured time)."""
    return plan.lc.size, plan.lc.y[:8].tobytes(), plan.lc.y[-8:].tobytes()


class Replay(backends.TLSBackend):
    """Hands ``search_batch`` the per-period statistics ``source`` (a
    ``TLSBackend``) found for ``curves`` (searched once, on construction), in
    no time; it takes ``source``'s name, exactness and device. ``plans``: the
    curves' (``plans_of``), where already made."""

    def __init__(self, curves, source, plans=None, **options):
        super().__init__()
        self.name, self.exact, self.device = source.name, source.exact, source.device
        plans = plans if plans is not None else plans_of(curves, options)
        self.found = {_key(plan): stats for (plan, _), stats in zip(plans, source.search_many(plans))}

    def search(self, plan, periods, progress=None):
        return self.found[_key(plan)]


def _median_cpu_us(work, calls) -> float:
    """The median CPU microseconds of ``work()`` over ``calls`` calls, after one."""
    work()
    runs = []
    for _ in range(calls):
        start = time.process_time()
        work()
        runs.append(time.process_time() - start)
    return statistics.median(runs) * 1e6


def cpu_probe_us(calls=20) -> float:
    """How fast this process's core runs compiled code now: the median CPU
    microseconds of one compute-only part of the host path
    (``PROBE_SPECTRUM``'s running median, ~0.1-0.4 ms), so that a host time
    measured beside it tells a slow spell of the machine from a slow change."""
    return _median_cpu_us(lambda: running_median(PROBE_SPECTRUM, PROBE_KERNEL), calls)


def _interpreted_work():
    """The host path's interpreted part in miniature, none of the project's
    code: Python calls, a dict, small numpy reductions (~0.4 ms)."""
    total = 0.0
    for i in range(100):
        total += float(np.max(PROBE_SMALL) - np.min(PROBE_SMALL)) + len({"i": i, "total": total})
    return total


def python_probe_us(calls=20) -> float:
    """How fast this process's core runs interpreted code now: the median CPU
    microseconds of ``_interpreted_work``. Most of the host path is such code:
    its statistics ran 2x slower on an H200 machine than on the development VM
    at about the same ``cpu_probe_us`` (reports/host_path/2026-11-29_H200)."""
    return _median_cpu_us(_interpreted_work, calls)


def host_seconds(curves, backend, lean=False, repeats=3, **options) -> dict:
    """CPU and wall seconds per light curve of ``search_batch(curves)`` with
    ``backend`` (a ``Replay``), median of ``repeats`` after one untimed run,
    and the median ``cpu_probe_us`` and ``python_probe_us`` taken before each of them."""
    backends.search_batch(curves, backend=backend, lean=lean, **options)
    cpu, wall, probe, python = [], [], [], []
    for _ in range(repeats):
        probe.append(cpu_probe_us())
        python.append(python_probe_us())
        start_cpu, start_wall = time.process_time(), time.perf_counter()
        backends.search_batch(curves, backend=backend, lean=lean, **options)
        cpu.append((time.process_time() - start_cpu) / len(curves))
        wall.append((time.perf_counter() - start_wall) / len(curves))
    return {"cpu_s_per_curve": statistics.median(cpu), "wall_s_per_curve": statistics.median(wall),
            "probe_us": statistics.median(probe), "python_probe_us": statistics.median(python)}
