"""Our backends inside transitleastsquares 2.0's own backend registry.

Every backend registered here is also registered with TLS as
``"bench-<name>"``, so ``transitleastsquares(t, y, dy).power(backend="bench-cpu")``
runs it and returns TLS's own results object and statistics.
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
        """TLS ``SearchBackend`` that runs one of our ``TLSBackend``s."""

        def __init__(self, backend):
            from backends.registry import get_backend

            self.backend = get_backend(backend)
            self.name = PREFIX + self.backend.name
            self.exact = self.backend.exact

        def search(self, problem, periods, use_threads=1, progress=None):
            plan = Plan.from_tls_problem(problem)
            stats = self.backend.search(plan, periods, progress=progress)
            return SearchResult.from_unsorted(periods, stats.chi2, stats.rows, stats.depths)

    return BenchSearchBackend


def search_backend(name_or_backend):
    """A TLS ``SearchBackend`` instance wrapping our backend (name or instance)."""
    return search_backend_class()(name_or_backend)


def register(name: str) -> None:
    from transitleastsquares.backends import register_backend

    register_backend(PREFIX + name, functools.partial(search_backend, name))


def unregister(name: str) -> None:
    from transitleastsquares.backends import _REGISTRY

    _REGISTRY.pop(PREFIX + name, None)


def register_all() -> None:
    from backends.registry import backend_names

    for name in backend_names():
        register(name)
