"""Peers: other packages' GPU transit searches, run on the same cleaned light
curve with the same transitleastsquares options as the workbench's backends,
so that their rows stand in the same validation reports and benchmarks.

    >>> from backends import peers
    >>> outcome = peers.search("peer:gtls", t, y, dy, period_max=20)
    >>> outcome["period"], outcome["sde"], outcome["status"], outcome["error"]

Peers are named ``peer:<name>``: ``peer:gtls`` (GTLS, ``gputls``, CuPy) and
``peer:cetra`` (CETRA, PyCUDA; a likelihood-ratio search of its own).
cuvarbase's TLS is not one: it is on GitHub only (the published cuvarbase,
0.2.5, has BLS, conditional entropy, PDM and Lomb-Scargle but no TLS).

How peers differ from backends: a backend computes TLS's own statistic inside
transitleastsquares' ``power()`` (it plugs into TLS's backend registry as
``bench-<name>`` and ``backends.search`` returns TLS's results object); a peer
is another package's search from the light curve up, with its own grids,
statistic and results. So peers are not in TLS's registry, ``backends.search``
and ``get_backend`` refuse their names (pointing here), and what a peer gives
is reduced to one flat outcome (``outcome.py``): period, T0, duration, depth,
SDE and SNR where the peer has them, runtime, and an error with a status
(``ok``, ``nonsense``, ``failed``, ``crashed``, ``timeout``). ``search`` never
raises for what the peer does, only for how it is asked (an unknown or
unavailable peer, a bad option).

Every peer runs in a process of its own (``worker.py``), one long-lived
worker per peer, replaced after a crash, a failure or a timeout
(``TLS_WORKBENCH_PEER_TIMEOUT`` seconds, default 600, or ``timeout=``).
Each peer searches TLS's own trial periods for the options given (the grid
``power()`` would search); how each maps the other options, and what it
cannot match, is in its module's docstring (``gtls.py``, ``cetra.py``).

A peer module (or ``"module:attribute"`` object, ``register_peer``) has
``DEVICE`` ("gpu" or "cpu"), ``PACKAGE`` (its distribution, for the version;
None for none), ``missing()`` (why it cannot run here, or None; without
importing the package or creating a CUDA context) and, run in the worker,
``run(t, y, dy, periods, options)`` -> dict of some of period, t0, duration,
depth_ppm, sde, snr, fap.
"""

from __future__ import annotations

import os
from typing import Dict, Optional

from backends.frontend import versions
from backends.peers import outcome
from backends.peers.worker import PeerProcess, load

PREFIX = "peer:"
TIMEOUT_VARIABLE = "TLS_WORKBENCH_PEER_TIMEOUT"
DEFAULT_TIMEOUT = 600.0

_PEERS: Dict[str, str] = {"peer:gtls": "backends.peers.gtls", "peer:cetra": "backends.peers.cetra"}
_WORKERS: Dict[str, PeerProcess] = {}


def is_peer(name) -> bool:
    """Whether ``name`` is in the peers' name family (``peer:...``), known or not."""
    return isinstance(name, str) and name.startswith(PREFIX)


def peer_names():
    return list(_PEERS)


def register_peer(name: str, entry: str) -> None:
    """Register a peer: ``name`` ``peer:<something>``, ``entry`` a module path or
    ``"module:attribute"`` importable in a fresh process."""
    if not is_peer(name) or name == PREFIX:
        raise ValueError(f"a peer's name starts with {PREFIX!r}, e.g. 'peer:mine'; got {name!r}")
    if name in _PEERS:
        raise ValueError(f"peer {name!r} is already registered")
    _PEERS[name] = entry


def unregister_peer(name: str) -> None:
    _stop(name)
    _PEERS.pop(name)


def _peer(name):
    if name not in _PEERS:
        raise ValueError(f"unknown peer {name!r}; known peers: {', '.join(_PEERS)}")
    return load(_PEERS[name])


def missing(name: str) -> Optional[str]:
    """Why peer ``name`` cannot run here (one sentence), or None."""
    try:
        peer = _peer(name)
    except ImportError as exc:
        return f"cannot import the peer's module: {exc}"
    return peer.missing()


def available() -> Dict[str, Optional[str]]:
    """Every registered peer -> None if it can run here, else why not."""
    return {name: missing(name) for name in _PEERS}


def require(name: str) -> str:
    """``name``, when it is a peer that can run here; else ValueError (unknown)
    or ``BackendUnavailable`` (saying what is missing)."""
    from backends.registry import BackendUnavailable

    why = missing(name)
    if why is not None:
        raise BackendUnavailable(f"peer {name!r} cannot run here: {why}")
    return name


def timeout_seconds() -> float:
    return float(os.environ.get(TIMEOUT_VARIABLE, DEFAULT_TIMEOUT))


def search(name: str, t, y=None, dy=None, *, timeout: Optional[float] = None, **options) -> dict:
    """Search one light curve with peer ``name`` in its worker process.

    ``t, y, dy`` as for ``backends.search`` (cleaned the same way); ``options``:
    transitleastsquares ``power()`` options (checked the same way; the peer
    searches TLS's trial periods for them). Returns the flat outcome
    (``outcome.py``), with ``name``, ``device`` and ``version``.
    """
    from backends.frontend import device_name
    from backends.gpu import gpu_name
    from backends.grids import checked_light_curve, trial_periods

    peer = _peer(require(name))
    lc = checked_light_curve(t, y, dy, **options)
    periods = trial_periods(lc.t, lc.y, lc.dy, **options)
    request = dict(t=lc.t, y=lc.y, dy=lc.dy, periods=periods, options=options)
    worker = _WORKERS.setdefault(name, PeerProcess(name, _PEERS[name]))
    status, value, seconds = worker.call(request, timeout or timeout_seconds())
    found = outcome.judged(value, seconds, periods) if status == "ok" else outcome.failure(status, value, seconds)
    found.update(name=name, device=gpu_name(0) if peer.DEVICE == "gpu" else device_name(peer),
                 version=versions((peer.PACKAGE,)).get(peer.PACKAGE) if peer.PACKAGE else None)
    return found


def _stop(name):
    worker = _WORKERS.pop(name, None)
    if worker is not None:
        worker.stop()


def shutdown() -> None:
    """End every peer's worker process (they also end with this process)."""
    for name in list(_WORKERS):
        _stop(name)

