"""``thrust``: PyCUDA + CUB (``backends/cuda/thrust.cu``) for large n and many
periods, all in global memory: CUB block merge sort of tiles, stable merge
passes, then the chi2 scan with float32 dot products on polyphase copies in
shared memory (approximate, see ``pycuda_base``), or the float64
``scan_folded`` when the copies do not fit."""

from __future__ import annotations

import numpy as np

from backends.implementations.pycuda_base import BLOCK_SIZES, FoldedScanBackend, phase_templates, to_device

THRUST_ITEMS = 8  # samples per thread in a CUB tile
PHASE_NAMES = ("phase_a", "phase_first", "phase_taps")  # phase_templates' arrays


class ThrustBackend(FoldedScanBackend):
    """CUB block merge sort, stable merge passes and block scan in global memory."""

    name = "thrust"
    summary = "approximate (float32 dot products), PyCUDA + CUB: block merge sort, merge passes, block scan"
    exact = False
    variant = "thrust"
    defines = {"ITEMS": THRUST_ITEMS}

    def padded(self, n, block):
        tile = block * THRUST_ITEMS
        return -(-n // tile) * tile

    def fold_sort(self, state, periods):
        import pycuda.gpuarray as ga

        with self.context():
            b, block = len(periods), state.block
            padded = self.padded(state.n, block)
            keys = [ga.empty(b * padded, np.float64) for _ in range(2)]
            order = [ga.empty(b * padded, np.int32) for _ in range(2)]
            self.function("thrust_tile_sort", block)(
                state.t, np.int32(state.n), np.int32(padded),
                to_device(periods, np.float64), keys[0], order[0],
                block=(block, 1, 1), grid=(padded // (block * THRUST_ITEMS), b))
            merge = self.function("thrust_merge_pass", block)
            width, src = block * THRUST_ITEMS, 0
            while width < padded:
                merge(np.int32(padded), np.int32(width), keys[src], order[src],
                      keys[1 - src], order[1 - src],
                      block=(block, 1, 1), grid=(-(-padded // block), b))
                width, src = 2 * width, 1 - src
            folded = self._folded_buffers(b, state.m)
            self.function("thrust_gather", block)(
                state.y, state.w, np.int32(state.n), np.int32(state.m), np.int32(padded),
                order[src], *folded, block=(block, 1, 1), grid=(b, 1))
            return folded

    def sort_bytes(self, plan):
        return 24 * self.padded(plan.lc.size, max(BLOCK_SIZES))

    def chi2_scan(self, state, folded, periods, lo, hi):
        """thrust_scan when the polyphase copies fit in shared memory, else
        the float64 scan_folded."""
        shared = 8 * state.cap
        with self.context():
            if shared > self.shared_limit("thrust_scan", state.block):
                return super().chi2_scan(state, folded, periods, lo, hi)
            templates = state.tables.pointers("widths", "strides", "overshoot", *PHASE_NAMES)
            return self._scan_launch(state, "thrust_scan", folded, (np.int32(state.m), np.int32(state.cap)),
                                     templates, lo, hi, shared=shared)

    def template_sections(self, tp):
        """The templates, then their polyphase taps (``phase_templates``) for thrust_scan."""
        return [*super().template_sections(tp), *zip(PHASE_NAMES, phase_templates(tp))]
