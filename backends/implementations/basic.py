"""``basic``: the plainest correct PyCUDA kernels (``backends/cuda/basic.cu``),
the exact GPU baseline: global memory, one block per period, a bitonic sort
of the fold padded to a power of two, then the shared float64 ``scan_folded``."""

from __future__ import annotations

import numpy as np

from backends.implementations.pycuda_base import FoldedScanBackend, to_device


def next_pow2(n: int) -> int:
    return 1 << max(0, int(n - 1).bit_length())


class BasicBackend(FoldedScanBackend):
    """Plainest correct kernels: global memory, one block per period."""

    name = "basic"
    summary = "PyCUDA baseline: global memory, bitonic sort, one block per period"
    variant = "basic"

    def fold_sort(self, state, periods):
        import pycuda.gpuarray as ga

        with self.context():
            b, n2 = len(periods), next_pow2(state.n)
            folded = self._folded_buffers(b, state.m)
            keys, order = ga.empty(b * n2, np.float64), ga.empty(b * n2, np.int32)
            fn = self.function("basic_fold_sort", state.block)
            fn(state.t, state.y, state.w, np.int32(state.n), np.int32(n2), np.int32(state.m),
               to_device(periods, np.float64), keys, order, *folded,
               block=(state.block, 1, 1), grid=(b, 1))
            return folded

    def sort_bytes(self, plan):
        return 12 * next_pow2(plan.lc.size)
