"""PyCUDA's device memory pool, safe to give memory back to from any thread.

PyCUDA aborts the process (an exception in a C++ destructor) when a pooled
block is freed in a thread where no context is current while its pool holds
no other block: the pool then takes the current context as its own and finds
none. A search's blocks can lose their last reference in such a thread: a Dask
worker's profiler holds the task thread's frames, and with them the locals of a
search that has just returned, and lets them go in the worker's event loop
(H100, one worker, ``reports/host_path/2026-11-24d_H100/``: aborted after
~1,800 light curves, every time). Such a block waits, still allocated, among
the pool's orphans until the next ``allocate`` or ``free_held`` frees it in the
context, or the pool goes and frees them in the context it was made in (a
search's state outliving its backend's context).
"""

from __future__ import annotations

POOL_KEEP_BYTES = 1 << 28  # pool memory kept across light-curve shapes (a K2-size search holds < 1 MB)


class PooledScratch:
    """For a PyCUDA backend whose searches take their scratch and samples from
    one ``DevicePool`` (no cuMemAlloc per batch): ``_allocate`` for ``Staged``,
    and ``_pool_for(plan)``, which ``search`` calls first, keeping the pool's blocks
    for the next light curve of the same shape, and of another only while it
    holds little (``POOL_KEEP_BYTES``): processes sharing a GPU (validation
    --jobs) that kept every size they ever made held 80 GB on the H100 and fell
    to one-period batches, while re-allocating for each search costs ~10 ms
    on a TESS sector, and a K2 survey's curves differ in length."""

    _pool = None
    _pool_shape = None

    def _allocate(self, nbytes):
        """Device memory from this backend's pool. Call in its context."""
        if self._pool is None:
            self._pool = DevicePool()
        return self._pool.allocate(nbytes)

    def search(self, plan, periods, progress=None):
        """As every backend, the pool kept or let go first (``_pool_for``)."""
        self._pool_for(plan)
        return super().search(plan, periods, progress)

    def _pool_for(self, plan) -> bool:
        """Before a search of ``plan``: whether the pool gave its blocks back
        (another shape while it holds more than POOL_KEEP_BYTES)."""
        shape = (plan.lc.size, plan.templates.maxwidth)
        freed = self._pool is not None and shape != self._pool_shape and self._pool.managed_bytes > POOL_KEEP_BYTES
        if freed:
            with self.context():
                self._pool.free_held()
        self._pool_shape = shape
        return freed


class DevicePool:
    """``pycuda.tools.DeviceMemoryPool`` whose blocks (``Block``) go back to it
    where a context is current and are kept as orphans where none is. Call
    ``allocate`` and ``free_held`` in the device's context."""

    _orphans = ()  # none to free if __init__ did not finish

    def __init__(self):
        import pycuda.driver as cuda
        from pycuda.tools import DeviceMemoryPool

        self._pool = DeviceMemoryPool()
        self.current_context = cuda.Context.get_current
        self._context, self._pop = cuda.Context.get_current(), cuda.Context.pop  # made where it allocates
        self._orphans = []  # appended to by Block from any thread: list.append and list.pop are atomic

    def __del__(self):
        """Its orphans freed in its context: past this they would go back to
        the pool with none current, wherever the pool lost its last reference."""
        if self._orphans:
            self._context.push()
            try:
                self._free_orphans()
            finally:
                self._pop()

    def allocate(self, nbytes) -> "Block":
        self._free_orphans()
        return Block(self._pool.allocate(nbytes), self)

    def free_held(self):
        """Free the orphans and every block the pool holds for reuse."""
        self._free_orphans()
        self._pool.free_held()

    def _free_orphans(self):
        while self._orphans:
            self._orphans.pop().free()

    @property
    def orphans(self) -> int:
        return len(self._orphans)

    @property
    def managed_bytes(self) -> int:
        return self._pool.managed_bytes

    @property
    def held_blocks(self) -> int:
        return self._pool.held_blocks


class Block:
    """One pooled allocation; ``int(block)`` is its device address."""

    __slots__ = ("memory", "pool")

    def __init__(self, memory, pool):
        self.memory = memory
        self.pool = pool

    def __int__(self):
        return int(self.memory)

    def __del__(self):
        if self.pool.current_context() is None:
            self.pool._orphans.append(self.memory)  # else the pooled allocation goes back as this block goes
