"""``search_batch``: many light curves through one backend, one outcome per curve.

Light curves go in chunks, the first ones growing 1, 2, 4, ... (``_ramp``) so
that the device starts after one light curve's plan. Host work per light curve
(cleaning, TLS's grids and templates: the plan) runs on a thread pool a chunk
ahead of the device;
each chunk's statistics come from one ``backend.search_many`` call (``simple``
packs many light curves into each launch and overlaps its host work with the
device through CUDA streams and pinned memory; other backends search one light
curve after another); each light curve's statistics go to the pool as soon as
``search_many`` has them (its ``found``), where they become TLS's results
object (``backends.statistics``: ``power()``'s values), or with ``lean`` the
same without model light curves and folded arrays: a batch's last light
curves wait for one light curve's statistics, not a chunk's. A light curve that fails
gives a ``BatchError`` in its place; the others are not lost. Light curves a
backend cannot take in the batch (refused by the backend ``auto`` chose; pre-
binned by TLS for an approximate backend) are searched alone, as
``backends.search`` searches, from the plan already made.

The thread that feeds the device hands the GIL back at every wait for it and
must get it again at once, or the device idles: while a batch runs, the GIL's
switch interval is at most ``SWITCH_INTERVAL_S`` (CPython's 5 ms default cost
the H100 ~15 % of a K2 survey's rate), and the statistics' compiled parts
(running median, T0 fit, per-transit statistics) release it. It waits for a
chunk's plans, and for its results, all at once: woken for each light
curve's future, it took the GIL back and forth ~6 times per light curve.
"""

from __future__ import annotations

import functools
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass
from itertools import islice
from typing import Any

import numpy as np

from backends import inputs
from backends.frontend import backend_meta, planned_search, prebinned, stage_timings
from backends.grids import plan_light_curve
from backends.interrupts import reraise_interrupt
from backends.protocol import InputTooLarge, TLSBackend


SWITCH_INTERVAL_S = 5e-4


class _PromptHandover:
    """Holds the GIL's switch interval at most ``SWITCH_INTERVAL_S`` while any
    batch runs (batches in several threads share it), the process's own again
    after the last one."""

    def __init__(self):
        self.lock = threading.Lock()
        self.batches = 0
        self.before = None

    def __enter__(self):
        with self.lock:
            if self.batches == 0:
                self.before = sys.getswitchinterval()
                sys.setswitchinterval(min(self.before, SWITCH_INTERVAL_S))
            self.batches += 1

    def __exit__(self, *exc):
        with self.lock:
            self.batches -= 1
            if self.batches == 0:
                sys.setswitchinterval(self.before)


PROMPT_HANDOVER = _PromptHandover()


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


@dataclass(frozen=True)
class _Case:
    """A light curve ready for the device: its cleaning report and plan, and
    the host seconds they took."""

    id: Any
    cleaning: dict
    plan: Any
    periods: np.ndarray
    seconds: float


def _prepare(index, item, tls_options):
    """A ``_Case`` for one batch item, or its ``BatchError``."""
    curve_id = item.get("id", index) if isinstance(item, dict) else index
    try:
        start = time.perf_counter()
        curve_id, t, y, dy = unpack(item, index)
        lc, plan, periods = plan_light_curve(t, y, dy, **tls_options)
        return _Case(curve_id, lc.report, plan, periods, time.perf_counter() - start)
    except Exception as exc:  # one bad light curve must not cost the batch
        return BatchError.of(curve_id, exc)


def _per_curve(many, one, items, ids) -> list:
    """``many(items)``, one value per item; if it raises, ``one(item)`` for
    each item, so that an error is its own light curve's ``BatchError``."""
    try:
        return many(items)
    except Exception as exc:
        reraise_interrupt(exc)
    out = []
    for item, curve_id in zip(items, ids):
        try:
            out.append(one(item))
        except Exception as exc:
            out.append(BatchError.of(curve_id, exc))
    return out


class _Runner:
    """One backend instance for the whole batch, resolved once: ``auto`` for
    the size of the first light curve (the first chunk holds one, ``_ramp``;
    none if it failed); a light curve that choice refuses (``InputTooLarge``)
    is searched alone with ``auto``, which skips it."""

    def __init__(self, backend, lean):
        from backends.registry import get_backend

        self.requested, self.lean = backend, lean
        self.auto = backend == "auto"
        self.instance = None if self.auto else get_backend(backend)  # a bad name fails at once
        self.meta = None

    def _settle(self, cases):
        from backends.registry import get_backend

        if self.instance is None:
            first = next((c.plan.lc.size for c in cases if not isinstance(c, BatchError)), None)
            self.instance = get_backend("auto", ndata=first)
        if self.meta is None:
            self.meta = backend_meta(self.instance, self.requested)

    def chunk(self, cases, pool):
        """The outcomes of one chunk, in order, as a callable that waits for
        them: the chunk's statistics in one ``search_many``, each light curve's
        TLS results made on ``pool`` as soon as its statistics are back."""
        self._settle(cases)
        out, ready = [None] * len(cases), []
        for k, case in enumerate(cases):
            why = None if isinstance(case, BatchError) else self.instance.refuses(case.plan)
            if isinstance(case, BatchError):
                out[k] = case
            elif why is not None:
                out[k] = self._alone(case, "auto") if self.auto else BatchError.of(case.id, InputTooLarge(why))
            elif prebinned(self.instance, case.plan):
                out[k] = self._alone(case, self.instance)
            else:
                ready.append(k)
        self.instance.timings.clear()
        start = time.perf_counter()
        jobs = [cases[k] for k in ready]
        made = {}  # job -> the future of (results, seconds) of its light curve

        def found(j, stats):
            made[j] = pool.submit(self._results, jobs[j], stats)

        stats = _per_curve(lambda cs: self.instance.search_many([(c.plan, c.periods) for c in cs], found=found),
                           lambda c: self.instance.search(c.plan, c.periods), jobs, [c.id for c in jobs])
        batch = {"light_curves": len(ready), "seconds": time.perf_counter() - start,
                 "timings": dict(self.instance.timings)}
        for j, s in enumerate(stats):  # those search_many did not hand over: searched alone after it failed
            if j not in made and not isinstance(s, BatchError):
                found(j, s)
        return functools.partial(self._outcomes, out, ready, jobs, made, stats, batch)

    def _results(self, case, stats):
        """(TLS's results object of a searched light curve, or its
        ``BatchError``; the seconds it took)."""
        from backends.statistics import tls_results

        start = time.perf_counter()
        try:
            results = tls_results(case.plan, stats, self.lean)
        except Exception as exc:
            results = BatchError.of(case.id, exc)
        return results, time.perf_counter() - start

    def _outcomes(self, out, ready, jobs, made, stats, batch) -> list:
        """``out`` with the outcome of each searched light curve (``ready``:
        their places), its meta holding its share of the chunk's stage times."""
        share = {stage: s / max(1, len(ready)) for stage, s in batch["timings"].items()}
        wait(made.values())
        for j, (k, case) in enumerate(zip(ready, jobs)):
            if j not in made:
                out[k] = stats[j]  # its BatchError
                continue
            results, seconds = made[j].result()
            if not isinstance(results, BatchError):
                results["meta"] = {**self.meta, "timings": stage_timings(share, case.seconds, seconds),
                                   "cleaning": case.cleaning, "batch": batch, "id": case.id}
            out[k] = results
        return out

    def _alone(self, case, backend):
        """``backends.frontend.planned_search`` of one light curve (TLS's
        ``power()`` where it pre-bins; ``auto`` picks a backend for it)."""
        try:
            results = planned_search(case.plan, case.periods, backend, case.cleaning, case.seconds, self.lean)
        except Exception as exc:
            return BatchError.of(case.id, exc)
        results.meta.update(id=case.id, requested_backend=self.meta["requested_backend"])
        return results


def _ramp(chunk_size):
    """Chunk sizes 1, 2, 4, ... up to ``chunk_size``, then ``chunk_size``: the
    device starts after one light curve's plan instead of a whole chunk's
    (32 K2-like plans, ~40 ms by estimate), and each chunk's plans are made while the one
    before it, half its size, is searched (64 K2-like curves, ``pruned`` on an
    H100: end to end 0.87-0.89 -> 0.95 of ``search_many``'s rate)."""
    size = 1
    while True:
        yield min(size, chunk_size)
        size *= 2


def search_batch(light_curves, backend="auto", *, chunk_size=32, workers=1, lean=False, **tls_options):
    """Search every light curve of ``light_curves``; return, in input order,
    TLS's results object (``meta["id"]`` set) or a ``BatchError`` for each.

    ``backend``: a registered name, ``"auto"`` or a ``TLSBackend`` instance;
    an unknown or unavailable backend, or an unknown ``power()`` option, raises
    at once (nothing could run).
    ``chunk_size`` light curves share one ``search_many`` (the first chunks
    1, 2, 4, ... of them); ``workers`` threads build plans and results beside
    it. That host work is Python under the GIL: one thread overlaps it with
    the device, and more only contend (H200: 8 threads gave 19 curves/s where
    one at a time gave 32). Many cores need many processes: ``python -m
    validation.batch``. ``lean``: results without
    ``backends.statistics.FOLDED_KEYS`` (model light curves, folded arrays),
    a survey's mode. ``tls_options`` go to every search (see
    ``backends.search``); ``show_progress_bar=True`` shows one bar over the
    light curves, searched chunk by chunk. ``meta["timings"]`` holds the
    light curve's plan and statistics seconds plus its share of its chunk's
    search stages; ``meta["batch"]`` the chunk's.
    """
    if not isinstance(backend, (str, TLSBackend)):
        raise TypeError(f"backend must be a name or a TLSBackend, got {type(backend).__name__}")
    inputs.check_options(tls_options)  # a misspelt option is the caller's, not one light curve's
    from tqdm import tqdm

    show_bar = tls_options.pop("show_progress_bar", False)  # the batch's bar, not each search's
    runner = _Runner(backend, lean)
    items = enumerate(light_curves)
    total = len(light_curves) if hasattr(light_curves, "__len__") else None
    with PROMPT_HANDOVER, ThreadPoolExecutor(workers) as pool, tqdm(
            total=total, unit="lc", desc="light curves searched", disable=not show_bar) as bar:

        def prepared():  # a chunk's plans, the next chunk's already submitted
            ahead = None
            for size in _ramp(chunk_size):
                if not (chunk := list(islice(items, size))):
                    break
                futures = [pool.submit(_prepare, k, item, tls_options) for k, item in chunk]
                if ahead is not None:
                    yield ahead
                ahead = futures
            if ahead is not None:
                yield ahead

        chunks = []
        for futures in prepared():
            wait(futures)
            chunks.append(runner.chunk([f.result() for f in futures], pool))
            bar.update(len(futures))
        return [outcome for chunk in chunks for outcome in chunk()]
