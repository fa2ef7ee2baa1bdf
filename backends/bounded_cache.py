"""A bounded, thread-safe LRU of built values, keyed on every input of the
build: compiled kernels (``backends.kernel_cache``) and the host's grids and
templates (``backends.tls_model``) are each kept in one."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Callable, Hashable


class BoundedCache:
    """Bounded LRU. ``get(key, build)`` returns the cached value or calls
    ``build()`` once, under the lock, so concurrent callers of one key never
    build twice; ``builds`` counts the calls to ``build``."""

    def __init__(self, maxsize: int = 32):
        if maxsize < 1:
            raise ValueError("maxsize must be at least 1")
        self.maxsize = maxsize
        self.builds = 0
        self._entries: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable, build: Callable[[], object]):
        with self._lock:
            if key in self._entries:
                self._entries.move_to_end(key)
                return self._entries[key]
            value = build()
            self.builds += 1
            self._entries[key] = value
            if len(self._entries) > self.maxsize:
                self._entries.popitem(last=False)
            return value

    def get_by_identity(self, objects: tuple, build: Callable[[], object], *key: Hashable):
        """``get`` keyed on which ``objects`` (by identity: arrays and plans are
        not hashable by value) and on ``key``; the entry holds the objects, so
        no other object takes their ids while it lives."""
        return self.get((tuple(map(id, objects)), *key), lambda: (objects, build()))[1]

    def __len__(self):
        with self._lock:
            return len(self._entries)

    def __contains__(self, key):
        with self._lock:
            return key in self._entries

    def clear(self):
        with self._lock:
            self._entries.clear()
