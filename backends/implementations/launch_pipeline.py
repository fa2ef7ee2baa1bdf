"""Packed launches in flight on CUDA streams, so the host builds the next pack
while the device runs the current one.

Each of ``depth`` slots owns a stream, page-locked host buffers (asynchronous
copies) and device buffers, grown on demand and kept across calls. A pack's
upload, kernel and download are queued on its slot's stream; the slot is
retired (results handed back) only when it is needed again or at ``drain``,
so up to ``depth`` packs overlap each other and the host's work. Device
stage times come from CUDA events; host stage times from the clock.
"""

from __future__ import annotations

import time

import numpy as np

from backends.implementations.event_clock import EventClock


class _Slot:
    """One stream with its buffers and the clock of the pack it runs."""

    def __init__(self, timings):
        import pycuda.driver as cuda

        self.stream = cuda.Stream()
        self.clock = EventClock(timings, self.stream)
        self.host_in = self.host_out = self.dev_in = self.dev_out = None
        self.on_done = None

    def reserve(self, nbytes_in, nbytes_out):
        import pycuda.driver as cuda

        if self.host_in is None or self.host_in.size < nbytes_in:
            size = max(nbytes_in, 1) * 3 // 2  # headroom: packs vary a little
            self.host_in, self.dev_in = cuda.pagelocked_empty(size, np.uint8), cuda.mem_alloc(size)
        if self.host_out is None or self.host_out.size < nbytes_out:
            size = max(nbytes_out, 1) * 3 // 2
            self.host_out, self.dev_out = cuda.pagelocked_empty(size, np.uint8), cuda.mem_alloc(size)


class LaunchPipeline:
    """Queue packs on round-robin streams; ``timings`` (a StageTimes) gets
    ``pack`` (host: layout into pinned memory), ``upload``, ``chi2_scan`` and
    ``download`` (device, events; the host's wait for them is not a stage, so
    that stages add up to the wall time when nothing overlaps)."""

    def __init__(self, timings, depth: int = 2):
        self.timings = timings
        self.slots = [_Slot(timings) for _ in range(depth)]
        self.turn = 0

    def submit(self, pack, launch, on_done):
        """Queue ``pack``: ``launch(pack, dev_in, dev_out, stream)`` queues the
        kernel (device pointers as ints); ``on_done(host_out)`` runs on the
        host once the pack's results are back."""
        import pycuda.driver as cuda

        slot = self.slots[self.turn % len(self.slots)]
        self.turn += 1
        self._retire(slot)
        start = time.perf_counter()
        slot.reserve(pack.nbytes, pack.out_nbytes)
        pack.write(slot.host_in)
        self.timings["pack"] += time.perf_counter() - start
        with slot.clock.stage("upload"):
            cuda.memcpy_htod_async(slot.dev_in, slot.host_in[:pack.nbytes], slot.stream)
        with slot.clock.stage("chi2_scan"):
            launch(pack, int(slot.dev_in), int(slot.dev_out), slot.stream)
        with slot.clock.stage("download"):
            cuda.memcpy_dtoh_async(slot.host_out[:pack.out_nbytes], slot.dev_out, slot.stream)
        slot.on_done = on_done

    def _retire(self, slot):
        if slot.on_done is None:
            return
        slot.clock.settle()
        on_done, slot.on_done = slot.on_done, None
        on_done(slot.host_out)

    def drain(self):
        """Retire every pack in flight, oldest first."""
        for k in range(len(self.slots)):
            self._retire(self.slots[(self.turn + k) % len(self.slots)])

    def abandon(self):
        """Wait for the streams and drop the packs in flight (after an error),
        so no copy outlives its buffers."""
        for slot in self.slots:
            slot.stream.synchronize()
            slot.clock.drop()
            slot.on_done = None
