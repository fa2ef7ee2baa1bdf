"""The peers a TLS user would otherwise pick, each run on a benchmark case and
reduced to the period it finds (its correctness is that period's error).

CPU transitleastsquares (its default backend and its exact ``fused`` one) and
astropy's BoxLeastSquares run in this process; GTLS (``gputls``, CuPy) and
CETRA (PyCUDA; its own statistic) are the workbench's peers
(``backends.peers``): each in a process of its own, on TLS's trial periods for
the case's options, so that their CUDA contexts never meet. Each peer says why
it cannot run here instead of failing.
"""

from __future__ import annotations

import importlib.util
import warnings

import numpy as np

from backends import peers as workbench_peers

# name -> (device, what runs it: a Python package used in this process, or a
# workbench peer's name)
PEERS = {
    "tls-default": ("cpu", "transitleastsquares"),
    "tls-fused": ("cpu", "transitleastsquares"),
    "gtls": ("gpu", "peer:gtls"),
    "cetra": ("gpu", "peer:cetra"),
    "bls": ("cpu", "astropy"),
}


def missing(name: str):
    """Why peer ``name`` cannot run here, or None."""
    runner = PEERS[name][1]
    if workbench_peers.is_peer(runner):
        return workbench_peers.missing(runner)
    return None if importlib.util.find_spec(runner) else f"Python package '{runner}' is not installed"


def _tls(case, backend):
    """``backend`` None: TLS's default; its worker pool kept between calls, as a user has it."""
    from backends.tls_power import power

    return power(case.t, case.y, case.dy, backend=backend, persistent_pool=True, **case.options).period


def _workbench_peer(name, case):
    """The period a workbench peer finds (its nonsense too); its failure raised."""
    found = workbench_peers.search(name, case.t, case.y, case.dy, **case.options)
    if found["status"] not in ("ok", "nonsense"):
        raise RuntimeError(f"{name}: {found['error']}")
    return found["period"]


def _bls(case):
    """BLS over the whole TLS grid of the case's options, as the other peers and
    ``bench_search.EndToEnd`` search (``case.periods`` is cut to ``nperiods``)."""
    from astropy.timeseries import BoxLeastSquares

    periods = np.sort(case.plan.model.grid.periods)
    durations = np.geomspace(0.02, min(0.3, 0.5 * periods[0]), 12)
    power = BoxLeastSquares(case.t, case.y, case.dy).power(periods, durations)
    return float(power.period[np.argmax(power.power)])


def run(name: str, case) -> float:
    """Best period [d] that peer ``name`` finds on ``case``."""
    runner = PEERS[name][1]
    if workbench_peers.is_peer(runner):
        return float(_workbench_peer(runner, case))
    runners = {"tls-default": lambda c: _tls(c, None), "tls-fused": lambda c: _tls(c, "fused"), "bls": _bls}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(runners[name](case))
