"""``search_batch``: many light curves through one backend, one outcome per curve.

Light curves go in chunks. Host work per light curve (cleaning, TLS's grids
and templates: the plan) runs on a thread pool a chunk ahead of the device;
each chunk's statistics come from one ``backend.search_many`` call (``simple``
packs many light curves into each launch and overlaps its host work with the
device through CUDA streams and pinned memory; other backends search one light
curve after another); then, on the pool, each light curve gets TLS's own
results object through transitleastsquares' ``power()``, exactly as
``backends.search`` gives it, from the statistics computed for it
(``Precomputed``). A light curve that fails gives a ``BatchError`` in its
place; the others are not lost.
"""

from __future__ import annotations

import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from itertools import islice
from typing import Any

import numpy as np

from backends import inputs
from backends.frontend import device_name, search
from backends.grids import make_plan
from backends.interrupts import reraise_interrupt
from backends.protocol import InputTooLarge, TLSBackend


@dataclass(frozen=True)
class BatchError:
    """The outcome of a light curve whose search failed."""

    id: Any
    error: str  # exception type
    message: str

    def __str__(self):
        return f"light curve {self.id!r}: {self.error}: {self.message}"

    @classmethod
    def of(cls, curve_id, exc):
        """The error of light curve ``curve_id``; an interrupt (Ctrl-C, also
        when numba wraps it) is raised, never recorded as a light curve's error."""
        reraise_interrupt(exc)
        return cls(curve_id, type(exc).__name__, str(exc))


_KEYS = (("t", "y", "dy"), ("time", "flux", "flux_err"))


def unpack(item, index):
    """(id, t, y, dy) of one batch item: a ``(t, y[, dy])`` tuple, a
    LightCurve-like object, or a dict with ``id`` and ``t, y[, dy]`` or
    ``time, flux[, flux_err]``. Items without an id get their position."""
    if isinstance(item, dict):
        for t_key, y_key, dy_key in _KEYS:
            if t_key in item and y_key in item:
                return item.get("id", index), item[t_key], item[y_key], item.get(dy_key)
        raise ValueError("a dict light curve needs 't' and 'y' (or 'time' and 'flux') entries")
    if isinstance(item, (tuple, list)):
        if len(item) not in (2, 3):
            raise ValueError(f"a tuple light curve is (t, y) or (t, y, dy), got {len(item)} entries")
        return (index, *item, None)[:4]
    return (index, *inputs.unpack(item))


class Precomputed(TLSBackend):
    """Hands ``power()`` the statistics a batch computed for this light curve
    (any order of the same periods, as TLS shuffles them); named after the
    backend that computed them. Fails loudly if asked for other periods."""

    def __init__(self, source: TLSBackend, periods, stats, device: str):
        super().__init__()
        self.name, self.exact, self.device = source.name, source.exact, source.device
        self.periods, self.stats, self._device = np.asarray(periods), stats, device

    def device_name(self) -> str:
        return self._device

    def search(self, plan, periods, progress=None):
        periods = np.asarray(periods)
        order = np.argsort(self.periods, kind="stable")
        at = order[np.clip(np.searchsorted(self.periods, periods, sorter=order), 0, order.size - 1)]
        if periods.size != self.periods.size or not np.array_equal(self.periods[at], periods):
            raise RuntimeError(f"power() asks for {periods.size} periods that differ from the "
                               f"{self.periods.size} searched for this light curve")
        if progress is not None:
            progress(periods.size)
        return type(self.stats)(self.stats.chi2[at], self.stats.rows[at], self.stats.depths[at])


@dataclass(frozen=True)
class _Case:
    """A light curve ready for the device: its raw input and TLS plan."""

    id: Any
    raw: tuple
    plan: Any
    periods: np.ndarray


def _prepare(index, item, tls_options):
    """A ``_Case`` for one batch item, or its ``BatchError``."""
    curve_id = item.get("id", index) if isinstance(item, dict) else index
    try:
        curve_id, t, y, dy = unpack(item, index)
        lc = inputs.clean(*inputs.unpack(t, y, dy))
        inputs.check_search(lc.t, tls_options)
        return _Case(curve_id, (t, y, dy), *make_plan(lc.t, lc.y, lc.dy, **tls_options))
    except Exception as exc:  # one bad light curve must not cost the batch
        return BatchError.of(curve_id, exc)


def _done(value) -> Future:
    future = Future()
    future.set_result(value)
    return future


class _Runner:
    """One backend instance for the whole batch. ``auto`` is resolved once, for
    the median size of the first chunk's light curves; a light curve that
    choice refuses (``InputTooLarge``) is searched alone with ``auto``, which
    skips it."""

    def __init__(self, backend, requested, tls_options):
        from backends.registry import get_backend

        self.auto = backend == "auto"
        self.instance = None if self.auto else get_backend(backend)  # a bad name fails at once
        self.requested, self.options, self.device = requested, tls_options, None

    def _settle(self, cases):
        from backends.registry import get_backend

        if self.instance is None:
            sizes = [c.plan.lc.size for c in cases if not isinstance(c, BatchError)]
            self.instance = get_backend("auto", ndata=int(np.median(sizes)) if sizes else None)
        if self.device is None:
            self.device = device_name(self.instance)

    def chunk(self, cases, pool) -> list:
        """Futures of the outcomes of one chunk, in order: the chunk's
        statistics in one ``search_many``, TLS's results on ``pool``."""
        self._settle(cases)
        out = [None] * len(cases)
        ready = []
        for k, case in enumerate(cases):
            why = None if isinstance(case, BatchError) else self.instance.refuses(case.plan)
            if isinstance(case, BatchError):
                out[k] = _done(case)
            elif why is not None and self.auto:
                out[k] = _done(self._alone(case))
            elif why is not None:
                out[k] = _done(BatchError.of(case.id, InputTooLarge(why)))
            else:
                ready.append(k)
        self.instance.timings.clear()
        start = time.perf_counter()
        stats = self._statistics([cases[k] for k in ready])
        batch = {"light_curves": len(ready), "seconds": time.perf_counter() - start,
                 "timings": dict(self.instance.timings)}
        share = {stage: s / max(1, len(ready)) for stage, s in batch["timings"].items()}
        for k, found in zip(ready, stats):
            out[k] = (_done(found) if isinstance(found, BatchError)
                      else pool.submit(self._results, cases[k], found, share, batch))
        return out

    def _statistics(self, cases):
        """PeriodStats per case from one ``search_many``; if it fails, each
        case alone, so that an error is its light curve's own."""
        try:
            return self.instance.search_many([(c.plan, c.periods) for c in cases])
        except Exception as exc:
            reraise_interrupt(exc)
            out = []
            for c in cases:
                try:
                    out.append(self.instance.search(c.plan, c.periods))
                except Exception as exc:
                    out.append(BatchError.of(c.id, exc))
            return out

    def _results(self, case, stats, share, batch):
        """TLS's results object from power(), as ``backends.search`` gives it."""
        try:
            bridge = Precomputed(self.instance, case.periods, stats, self.device)
            results = search(*case.raw, backend=bridge, **self.options)
        except Exception as exc:
            return BatchError.of(case.id, exc)
        timings = results.meta["timings"]
        timings.update(share)  # this light curve's share of the chunk's search
        timings["total"] += sum(share.values())
        results.meta["batch"] = batch
        return self._label(case.id, results)

    def _alone(self, case):
        try:
            return self._label(case.id, search(*case.raw, backend="auto", **self.options))
        except Exception as exc:
            return BatchError.of(case.id, exc)

    def _label(self, curve_id, results):
        results.meta["id"] = curve_id
        if self.requested is not None:
            results.meta["requested_backend"] = self.requested
        return results


def search_batch(light_curves, backend="auto", *, chunk_size=32, workers=1, **tls_options):
    """Search every light curve of ``light_curves``; return, in input order,
    TLS's results object (``meta["id"]`` set) or a ``BatchError`` for each.

    ``backend``: a registered name, ``"auto"`` or a ``TLSBackend`` instance;
    an unknown or unavailable backend, or an unknown ``power()`` option, raises
    at once (nothing could run).
    ``chunk_size`` light curves share one ``search_many``; ``workers`` threads
    build plans and results beside it. That host work is Python under the
    GIL: one thread overlaps it with the device, and more only contend (H200:
    8 threads gave 19 curves/s where one at a time gave 32). Many cores
    need many processes: ``python -m validation.batch``. ``tls_options`` go to
    every search (see ``backends.search``). ``meta["timings"]`` holds the
    light curve's own ``power()`` stages plus its share of its chunk's search
    stages; ``meta["batch"]`` the chunk's.
    """
    if not isinstance(backend, (str, TLSBackend)):
        raise TypeError(f"backend must be a name or a TLSBackend, got {type(backend).__name__}")
    inputs.check_options(tls_options)  # a misspelt option is the caller's, not one light curve's
    runner = _Runner(backend, backend if isinstance(backend, str) else None, tls_options)
    items = enumerate(light_curves)
    with ThreadPoolExecutor(workers) as pool:

        def prepared():  # a chunk's plans, the next chunk's already submitted
            ahead = None
            while chunk := list(islice(items, chunk_size)):
                futures = [pool.submit(_prepare, k, item, tls_options) for k, item in chunk]
                if ahead is not None:
                    yield ahead
                ahead = futures
            if ahead is not None:
                yield ahead

        outcomes = []
        for futures in prepared():
            outcomes += runner.chunk([f.result() for f in futures], pool)
        return [f.result() for f in outcomes]
