"""``search_batch``: many light curves through one backend, one outcome per curve.

Each light curve is searched with ``backends.search`` in turn, on one backend
instance reused for the whole batch (its kernels and device state built once).
A light curve that fails gives a ``BatchError`` in its place; the others are
not lost. Not implemented yet: packing several light curves into one GPU
launch, and overlapping transfers with compute through CUDA streams and pinned
host memory; a GPU backend still runs one light curve per search.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from backends import inputs
from backends.frontend import search
from backends.protocol import InputTooLarge, TLSBackend


@dataclass(frozen=True)
class BatchError:
    """The outcome of a light curve whose search failed."""

    id: Any
    error: str  # exception type
    message: str

    def __str__(self):
        return f"light curve {self.id!r}: {self.error}: {self.message}"


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


class _Backends:
    """One backend instance per backend name, reused across the batch.
    ``auto`` is resolved once; a light curve that choice refuses
    (``InputTooLarge``) is searched again with ``auto``, which skips it."""

    def __init__(self, backend):
        from backends.registry import get_backend, resolve

        self.auto = backend == "auto"
        self.instance = get_backend(resolve("auto") if self.auto else backend)

    def search(self, t, y, dy, **tls_options):
        try:
            return search(t, y, dy, backend=self.instance, **tls_options)
        except InputTooLarge:
            if not self.auto:
                raise
            return search(t, y, dy, backend="auto", **tls_options)


def search_batch(light_curves, backend="auto", **tls_options):
    """Search every light curve of ``light_curves``; return, in input order,
    TLS's results object (``meta["id"]`` set) or a ``BatchError`` for each.

    ``backend``: a registered name, ``"auto"`` or a ``TLSBackend`` instance;
    an unknown or unavailable backend raises at once (nothing could run).
    ``tls_options`` go to every search (see ``backends.search``).
    """
    if not isinstance(backend, (str, TLSBackend)):
        raise TypeError(f"backend must be a name or a TLSBackend, got {type(backend).__name__}")
    runner = _Backends(backend)
    outcomes = []
    for index, item in enumerate(light_curves):
        curve_id = item.get("id", index) if isinstance(item, dict) else index
        try:
            curve_id, t, y, dy = unpack(item, index)
            results = runner.search(t, y, dy, **tls_options)
        except Exception as exc:  # one bad light curve must not cost the batch
            outcomes.append(BatchError(curve_id, type(exc).__name__, str(exc)))
            continue
        results.meta["id"] = curve_id
        if isinstance(backend, str):
            results.meta["requested_backend"] = backend
        outcomes.append(results)
    return outcomes
