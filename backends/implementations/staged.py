"""Named arrays in one device allocation, written in one host-to-device copy
and read back in one: a search's small per-light-curve and per-period arrays
took one allocation and one synchronous copy each, ~50 us of host time apiece
on the H100 machines' CPUs, all of it serial with the device at the start and
end of a search (K2-like: 1.7 ms of 12.4)."""

from __future__ import annotations

import contextlib
import threading

import numpy as np

from backends.packing import layout


class PinnedBuffers:
    """Page-locked host buffers for ``Staged.read_queued``, shared by the
    process and lent for one use at a time: cuMemHostAlloc takes
    milliseconds, which a backend made per search (``backends.search`` with a
    backend's name) paid every time when each instance had its own (asv:
    K2-size searches of 1,000 periods 1.6-2x slower on the H100). Thread-safe;
    keeps the ``keep`` largest buffers."""

    def __init__(self, keep: int = 4):
        self.keep = keep
        self._free = []
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def lend(self):
        """A function giving a buffer of at least ``nbytes`` (a free one, else
        a new one); what it gave goes back at the end of the ``with`` block."""
        held = []

        def take(nbytes):
            with self._lock:
                fits = [buffer for buffer in self._free if buffer.size >= nbytes]
                buffer = min(fits, key=len) if fits else None
                self._free = [free for free in self._free if free is not buffer]  # by identity: arrays compare by value
            if buffer is None:
                import pycuda.driver as cuda

                buffer = cuda.pagelocked_empty(nbytes, np.uint8)
            held.append(buffer)
            return buffer

        try:
            yield take
        finally:
            with self._lock:
                self._free = sorted(self._free + held, key=len)[-self.keep:]

    def clear(self):
        """Let the free buffers go (those lent come back as usual)."""
        with self._lock:
            self._free = []


PINNED = PinnedBuffers()  # the process's, lent per search (pruned's results come back into them)


class Staged:
    """``sections``: (name, numpy array) pairs, written by the host (zeros
    included), or (name, (dtype, size)) pairs, left for the device to write,
    at ``packing.layout``'s offsets in one allocation of ``allocate(nbytes)``
    (``pycuda.driver.mem_alloc`` or a memory pool's ``allocate``), written in
    order with the work queued on the default stream. Call inside the
    device's context."""

    def __init__(self, sections, allocate):
        import pycuda.driver as cuda

        given = {name: np.ascontiguousarray(v) for name, v in sections if isinstance(v, np.ndarray)}
        shapes = {name: (given[name].dtype, given[name].size) if name in given else (np.dtype(v[0]), int(v[1]))
                  for name, v in sections}
        self.dtypes = {name: dtype for name, (dtype, _) in shapes.items()}
        self.sizes = {name: size for name, (_, size) in shapes.items()}
        self.offsets, nbytes = layout((name, dtype.itemsize * size) for name, (dtype, size) in shapes.items())
        self.memory = allocate(max(1, nbytes))
        self._pointers = {}  # (name, start) -> pointer: a launch asks for ~30
        if given:
            cuda.memcpy_htod_async(int(self.memory), self._packed(given, 0))  # as ``write``: no wait for the DMA

    def write(self, arrays: dict):
        """Copy ``arrays`` (name: array, sections left to the device at first)
        up in one asynchronous copy of the span they cover: from pageable
        memory it returns once the bytes are staged, without waiting for the
        kernels queued before it, and runs in order with them."""
        import pycuda.driver as cuda

        first, nbytes = self._span(arrays)
        end = first + nbytes
        covered = [name for name in self.offsets if name not in arrays and self.sizes[name]
                   and first < self._end(name) and self.offsets[name] < end]
        if covered:
            raise ValueError(f"writing {sorted(arrays)} would overwrite {covered}")
        cuda.memcpy_htod_async(int(self.memory) + first, self._packed(arrays, first))

    def _packed(self, arrays, first) -> np.ndarray:
        """The bytes of ``arrays`` at their offsets less ``first``, gaps
        zeroed; one array at ``first`` is its own bytes (nothing to pack)."""
        arrays = {name: np.ascontiguousarray(array, self.dtypes[name]) for name, array in arrays.items()}
        for name, array in arrays.items():
            if array.size != self.sizes[name]:
                raise ValueError(f"{name} holds {self.sizes[name]} values, not {array.size}")
        if len(arrays) == 1 and self.offsets[next(iter(arrays))] == first:
            return next(iter(arrays.values()))
        host = np.zeros(max(self._end(name) for name in arrays) - first, np.uint8)
        for name, array in arrays.items():
            host[self.offsets[name] - first:self._end(name) - first] = array.view(np.uint8).ravel()
        return host

    def _end(self, name) -> int:
        return self.offsets[name] + self.dtypes[name].itemsize * self.sizes[name]

    def pointer(self, name, start=0) -> np.intp:
        """Device address of element ``start`` of ``name``, a kernel argument."""
        key = (name, start)
        if key not in self._pointers:
            self._pointers[key] = np.intp(int(self.memory) + self.offsets[name] + self.dtypes[name].itemsize * start)
        return self._pointers[key]

    def pointers(self, *names) -> tuple:
        return tuple(self.pointer(name) for name in names)

    def read(self, names) -> dict:
        """The arrays ``names`` copied back (one copy of the span they cover;
        it waits for the work queued before it)."""
        import pycuda.driver as cuda

        first, nbytes = self._span(names)
        host = np.empty(nbytes, np.uint8)
        cuda.memcpy_dtoh(host, int(self.memory) + first)
        return self._views(names, host, first)

    def read_queued(self, names, pinned):
        """``read`` queued behind the work before it, into page-locked memory
        (``pinned(nbytes)``: at least that many bytes, e.g. a function
        ``PinnedBuffers.lend`` gives) without waiting: the
        copy runs on the device right after that work, and the returned
        function gives the arrays (views of ``pinned``'s memory) once an event
        recorded after this call has passed."""
        import pycuda.driver as cuda

        first, nbytes = self._span(names)
        host = pinned(nbytes)[:nbytes]
        cuda.memcpy_dtoh_async(host, int(self.memory) + first)
        return lambda: self._views(names, host, first)

    def _span(self, names) -> tuple:
        """(first byte, bytes) of the span ``names`` cover."""
        first = min(self.offsets[name] for name in names)
        return first, max(self._end(name) for name in names) - first

    def _views(self, names, host, first) -> dict:
        return {name: np.frombuffer(host, self.dtypes[name], self.sizes[name], self.offsets[name] - first)
                for name in names}
