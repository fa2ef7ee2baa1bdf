"""Our backends inside transitleastsquares 2.0's own backend registry.

Every backend registered with ``backends.registry`` is also registered with
TLS as ``"bench-<name>"``, so ``transitleastsquares(t, y, dy).power(backend="bench-cpu")``
runs it and returns TLS's own results object and statistics. This module
knows backends only as instances and factories: the registry imports it,
never the other way round.
"""

from __future__ import annotations

import functools

PREFIX = "bench-"


@functools.lru_cache(maxsize=None)
def search_backend_class():
    """The TLS ``SearchBackend`` subclass that wraps ours (built once, on first
    use, so that importing this module imports no TLS internals)."""
    from transitleastsquares.backends import SearchBackend, SearchResult

    from backends.plan import Plan

    class BenchSearchBackend(SearchBackend):
        """TLS ``SearchBackend`` that runs one of our ``TLSBackend``s; on the
        search problem of ``plan`` (TLS's own, when power() runs on the plan's
        model) it searches that plan, made once, instead of a new one."""

        def __init__(self, backend, plan=None):
            self.backend, self.plan = backend, plan
            self.name = PREFIX + backend.name
            self.exact = backend.exact

        def search(self, problem, periods, use_threads=1, progress=None):
            mine = self.plan is not None and problem is self.plan.problem
            plan = self.plan if mine else Plan.from_tls_problem(problem)  # else a pre-binned copy
            stats = self.backend.search(plan, periods, progress=progress)
            return SearchResult.from_unsorted(periods, stats.chi2, stats.rows, stats.depths)

    return BenchSearchBackend


def search_backend(backend, plan=None):
    """A TLS ``SearchBackend`` instance wrapping our ``backend`` (a ``TLSBackend``),
    for searches of ``plan`` where given."""
    return search_backend_class()(backend, plan)


def register(name: str, factory) -> None:
    """``"bench-<name>"`` in TLS's registry; ``factory()`` makes our backend."""
    from transitleastsquares.backends import register_backend

    register_backend(PREFIX + name, lambda: search_backend(factory()))


def unregister(name: str) -> None:
    from transitleastsquares.backends import _REGISTRY

    _REGISTRY.pop(PREFIX + name, None)
