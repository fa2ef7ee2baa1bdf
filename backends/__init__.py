"""GPU TLS workbench: pluggable backends for the Transit Least Squares search.

    >>> import backends
    >>> results = backends.search(t, y, dy, backend="auto")   # TLS results + .meta
    >>> outcomes = backends.search_batch([(t, y, dy), ...])   # results or BatchError, each
    >>> backends.available_backends()                         # name -> None or why not

Importing this package creates no GPU context; GPU frameworks are imported by
a backend when it is first used. Every backend is also registered with
transitleastsquares as ``"bench-<name>"``.
"""

from backends.batch import BatchError, search_batch
from backends.frontend import search
from backends.grids import make_plan
from backends.plan import LightCurve, Plan, Templates
from backends.protocol import PeriodStats, TLSBackend
from backends.registry import (
    AUTO_ORDER,
    BackendUnavailable,
    available_backends,
    available_methods,
    backend_names,
    get_backend,
    register_backend,
    register_with_tls,
    resolve,
    unregister_backend,
)

register_with_tls()

__all__ = [
    "AUTO_ORDER", "BackendUnavailable", "BatchError", "LightCurve", "PeriodStats", "Plan", "TLSBackend",
    "Templates", "available_backends", "available_methods", "backend_names", "get_backend",
    "make_plan", "register_backend", "resolve", "search", "search_batch", "unregister_backend",
]
