"""The two searches of a case: the backend under test (``backends.search``, or
a peer's ``backends.peers.search`` in its own process) and CPU
transitleastsquares (``power(backend="fused")``, TLS's exact statistic), on
the same cleaned arrays with the same options, so the grids match.

A search's outcome is a flat dict of what the metrics compare (period, T0,
duration, depth, SDE, SNR, FAP, runtime, error) plus small arrays for the
report (periodogram, binned folded light curve). CPU TLS outcomes are cached
on disk, keyed by the input's hash, the options and the TLS version, so a
re-run of another backend never recomputes them. Optionally TLS's default
backend runs too (``--tls-default``), for users who compare with plain
``power()``.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import time
import warnings

import numpy as np

from backends import peers
from backends.interrupts import last_line, reraise_interrupt
from backends.peers import outcome as outcome_fields
from backends.peers.outcome import FIELDS  # a peer's outcome has a search side's fields
from datasets import bin_lightcurve
from validation import store

TLS_RUNNER = "fused"  # TLS 2.0.4's exact statistic, the contract every backend reproduces
FOLD_BINS = 800


def tls_default_runner():
    """The backend transitleastsquares uses when none is named."""
    from transitleastsquares import tls_constants

    return tls_constants.DEFAULT_BACKEND


def failed(error, runtime=math.nan):
    """(scalars, arrays) of a search that gave no result."""
    return outcome_fields.failed(error, runtime), {}


def outcome(results, runtime):
    """(scalars, arrays) of a TLS results object."""
    def num(key):
        value = results.get(key)
        try:
            return float(value)
        except (TypeError, ValueError):
            return math.nan

    scalars = dict(period=num("period"), t0=num("T0"), duration=num("duration"),
                   depth_ppm=(1.0 - num("depth")) * 1e6, sde=num("SDE"), snr=num("snr"),
                   fap=num("FAP"), runtime_s=runtime, error=None)
    arrays = dict(periods=np.asarray(results["periods"], np.float32),
                  power=np.asarray(results["power"], np.float32))
    phase = np.asarray(results.get("folded_phase", []), np.float64)
    if phase.size > 1 and np.ptp(phase) > 0:
        fold_phase, fold_y, _ = bin_lightcurve(phase, results["folded_y"], None,
                                               np.ptp(phase) / FOLD_BINS)
        arrays["fold_phase"] = fold_phase.astype(np.float32)
        arrays["fold_y"] = fold_y.astype(np.float32)
        model_phase = np.asarray(results["model_folded_phase"])
        step = max(1, model_phase.size // FOLD_BINS)
        arrays["model_phase"] = model_phase[::step].astype(np.float32)
        arrays["model_y"] = np.asarray(results["model_folded_model"])[::step].astype(np.float32)
    return scalars, arrays


def guarded(search):
    """``search`` that returns a failed outcome (with the traceback's last line)
    instead of raising; an interrupt, also one numba wrapped, is raised."""
    def run(*args, **kwargs):
        start = time.perf_counter()
        try:
            return search(*args, **kwargs)
        except Exception as exc:  # a backend failing on one case must not end the suite
            reraise_interrupt(exc)
            return failed(last_line(exc), time.perf_counter() - start)
    return run


def backend_search(backend, t, y, dy, options, lean=False):
    """A backend's outcome; ``lean``: without the periodogram's fold (scalars and spectrum only)."""
    from backends import search

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = search(t, y, dy, backend=backend, lean=lean, **options)
    scalars, arrays = outcome(results, results["meta"]["timings"]["total"])
    scalars.update(name=results["meta"]["backend"], device=results["meta"]["device"])
    return scalars, arrays


def peer_search(name, t, y, dy, options):
    """A peer's outcome (what it gives; its failure or nonsense in ``error``), no arrays."""
    found = peers.search(name, t, y, dy, **options)
    return {key: found[key] for key in (*FIELDS, "name", "device")}, {}


def searcher(backend):
    """What searches with ``backend`` (a name or instance) run after run: one
    instance, so that a GPU backend keeps its device state, buffers and kernels;
    ``auto`` stays a name, chosen for each light curve (or batch)."""
    from backends.registry import get_backend

    return backend if backend == "auto" else get_backend(backend)


def side_under_test(backend, lean=False):
    """The search of the side under test: a backend (name or instance, made
    once: ``searcher``; ``lean``: see ``backend_search``), or a peer (``peer:...``)."""
    if peers.is_peer(backend):
        return functools.partial(guarded(peer_search), backend)
    return functools.partial(guarded(backend_search), searcher(backend), lean=lean)


def resolve(backend):
    """The backend or peer ``backend`` stands for (``auto`` resolved); ValueError
    for an unknown name, ``BackendUnavailable`` for one that cannot run here."""
    from backends.registry import get_backend

    return peers.require(backend) if peers.is_peer(backend) else get_backend(backend).name


def tls_search(t, y, dy, options, use_threads=1, runner=TLS_RUNNER):
    from backends.tls_power import power

    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = power(t, y, dy, backend=runner, use_threads=use_threads, **options)
    scalars, arrays = outcome(results, time.perf_counter() - start)
    scalars.update(name=f"tls-{runner}")
    return scalars, arrays


def cache_key(t, y, dy, options, runner=TLS_RUNNER):
    """Hash of the input (to float32: a machine whose libm or batman build differs in
    the last bits still finds the record), the options and the TLS version."""
    from importlib.metadata import version

    h = hashlib.sha256()
    for arr in (t, y, dy):
        h.update(b"none" if arr is None else np.ascontiguousarray(arr, np.float32).tobytes())
    h.update(json.dumps([options, runner, version("transitleastsquares")], sort_keys=True).encode())
    return h.hexdigest()[:32]


class TLSCache:
    """CPU transitleastsquares outcomes on disk, one record per (input, options, TLS version)."""

    def __init__(self, directory, use_threads=1, runner=TLS_RUNNER, search=None):
        self.records = store.RecordDir(directory)
        self.use_threads = use_threads
        self.runner = runner
        self.search = search or functools.partial(tls_search, runner=runner)
        self.hits = 0

    def __call__(self, t, y, dy, options):
        key = cache_key(t, y, dy, options, self.runner)
        record = self.records.load(key)
        if record is not None:
            self.hits += 1
            record[0]["cached"] = True
            return record
        scalars, arrays = guarded(self.search)(t, y, dy, options, use_threads=self.use_threads)
        if scalars["error"] is None:  # failures are not cached: they may be transient
            self.records.save(key, scalars, arrays)
        scalars["cached"] = False
        return scalars, arrays


def warm_up(*searches):
    """Run each search once on a tiny light curve, so that JIT compilation and
    GPU start-up are not timed as part of the first case."""
    rng = np.random.default_rng(0)
    t = np.arange(0.0, 8.0, 0.02)
    y = 1.0 + rng.normal(0.0, 1e-3, t.size)
    y[np.abs((t - 1.0 + 1.0) % 2.0 - 1.0) < 0.05] -= 5e-3
    for search in searches:
        guarded(search)(t, y, np.full(t.size, 1e-3), {})
