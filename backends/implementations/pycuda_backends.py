"""PyCUDA backends ``basic``, ``simple`` and ``thrust``: the exact TLS
statistic on the GPU, three ways (sources in ``backends/cuda``).

- ``basic``: global memory, one block per period, bitonic sort; the baseline.
- ``simple``: one fused kernel per (light curve, period) in shared memory, for
  small light curves, many light curves per launch (``search_many``, packs on
  CUDA streams); refuses (before any launch) a light curve its shared memory
  cannot hold.
- ``thrust``: CUB block merge sort + stable merge passes + block scan, global
  memory, for large n and many periods.

The fold is float64 (absolute BKJD/BTJD times fold exactly as on the CPU).
``simple`` and ``thrust`` are approximate by TLS's own contract (per-period
chi2 within ~1e-5 relative, not 1e-10): they form the two template dot products in float32 on
polyphase copies of the fold (``phase_scan.cuh``; thrust falls back to the
float64 scan when the copies exceed shared memory); box depth, depth and gain
stay float64, and chi2 = chi2_flat - gain is formed on the host in float64. PyCUDA is imported lazily and works in the device's primary
context, so it shares one process (and context) with CuPy and numba.cuda.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from backends import packing
from backends.gpu import checked_block_size, missing_requirements
from backends.kernel_cache import KernelCache, nvcc_cubin
from backends.protocol import InputTooLarge, PeriodStats, TLSBackend

KERNELS = KernelCache(maxsize=32)
BLOCK_SIZES = (32, 64, 128, 256)
MEMORY_BUDGET = 1 << 30  # device bytes of batch scratch
# Multiply-adds per scan launch: a whole K2-like grid (1.1e11) in one launch,
# ~25 ms on an H200 (2e10, six launches, cost 6 ms more: host syncs and tail waves).
LAUNCH_MACS = 1.2e11
THRUST_ITEMS = 8  # samples per thread in a CUB tile
SHIFTS_PER_THREAD = 8  # phase_scan.cuh's SHIFTS_PER_THREAD


def block_size_for(n: int) -> int:
    """Threads per block from the number of samples. The 32/64/128/256 rule
    of thumb was replaced by a measurement for n >= 2000 (H200, n = 4,320 and
    18,000: 256 fastest or within noise for every variant, see reports/gpu)."""
    if n < 500:
        return 32
    if n < 2000:
        return 128
    return 256


def next_pow2(n: int) -> int:
    return 1 << max(0, int(n - 1).bit_length())


def width_macs(plan) -> np.ndarray:
    """Multiply-adds of one period's scan of each template width."""
    tp = plan.templates
    m = plan.lc.size + tp.maxwidth
    shifts = (m - tp.widths.astype(np.int64)) // tp.strides + 1
    return shifts * tp.lengths


def scan_macs(plan, lo=None, hi=None) -> int:
    """Multiply-adds of one period's scan over widths [lo, hi) (all by default)."""
    return int(np.sum(width_macs(plan)[lo:hi]))


def skewed(k: int) -> int:
    """phase_scan.cuh's skewed index: one pad slot every SHIFTS_PER_THREAD."""
    return k + k // SHIFTS_PER_THREAD


def phase_length(m: int, stride: int) -> int:
    """Entries per phase of a polyphase copy (phase_scan.cuh's phase_length)."""
    t = SHIFTS_PER_THREAD
    return (-(-m // stride) + 3 * t) // t * t


def phase_capacity(m: int, strides) -> int:
    """Floats per polyphase copy (rw or w) for every stride of the plan."""
    return max(skewed(int(s) * phase_length(m, int(s))) for s in np.unique(strides))


def simple_shared_bytes(n: int, maxwidth: int, strides) -> int:
    """Dynamic shared memory of ``simple_search``: skewed float64 cumulative
    flux, two float32 polyphase copies (which first hold the sort keys), the
    int order."""
    m = n + maxwidth
    return 8 * (skewed(m) + 1) + 8 * phase_capacity(m, strides) + 4 * n


def phase_templates(tp):
    """(float32 (a, a*a) tap pairs, int32 first tap, int32 taps per phase) of
    every width, in phase_scan.cuh's polyphase order: phase u of width wi holds
    a[u::stride], zero-padded to a multiple of SHIFTS_PER_THREAD taps."""
    t = SHIFTS_PER_THREAD
    parts, first, taps = [], [0], []
    for wi, stride in enumerate(tp.strides.tolist()):
        a = tp.a[tp.offsets[wi]:tp.offsets[wi + 1]]
        q = -(-(-(-a.size // stride)) // t) * t
        block = np.zeros((stride, q, 2), np.float32)
        for u in range(stride):
            block[u, :a[u::stride].size, 0] = a[u::stride]
            block[u, :a[u::stride].size, 1] = a[u::stride] ** 2
        parts.append(block.ravel())
        taps.append(q)
        first.append(first[-1] + stride * q)
    return np.concatenate(parts), np.array(first[:-1], np.int32), np.array(taps, np.int32)


def packed_curve(plan) -> packing.Curve:
    """A plan as ``simple_search`` reads it from a pack."""
    tp, n = plan.templates, plan.lc.size
    m = n + tp.maxwidth
    ta, first, taps = phase_templates(tp)
    return packing.Curve(
        t=plan.lc.t, y=plan.lc.y, w=plan.lc.w, widths=tp.widths, strides=tp.strides,
        overshoot=tp.overshoot, ta=ta, toff=first, taps=taps, m=m, cap=phase_capacity(m, tp.strides),
        depth_min=tp.depth_min, signal_depth=tp.signal_depth,
        shared=simple_shared_bytes(n, tp.maxwidth, tp.strides), width_macs=width_macs(plan))


@dataclass
class DeviceState:
    """A plan's arrays on the device plus the launch shape used for them."""

    plan: object
    n: int
    m: int
    block: int
    t: object
    y: object
    w: object
    templates: tuple  # widths, strides, offsets, a, overshoot (device arrays)

    @functools.cached_property
    def phase(self) -> tuple:
        """phase_templates() on the device, built on first use (only the float32
        scans read them; call inside the backend's context)."""
        import pycuda.gpuarray as ga

        return tuple(ga.to_gpu(x) for x in phase_templates(self.plan.templates))

    @property
    def cap(self) -> int:
        return phase_capacity(self.m, self.plan.templates.strides)


class PyCUDABackend(TLSBackend):
    """Shared PyCUDA plumbing: primary context, kernel cache, upload, results."""

    device = "gpu"
    variant = ""  # backends/cuda/<variant>.cu
    defines: dict = {}

    def __init__(self, block_size: int | None = None):
        super().__init__()
        self.block_size = checked_block_size(block_size, BLOCK_SIZES)
        self._ctx = None

    @classmethod
    def missing(cls):
        return missing_requirements(packages=("pycuda",), nvcc=True)

    # ---- context and kernels -------------------------------------------------------
    @contextlib.contextmanager
    def context(self):
        """The device's primary context, current for the duration."""
        import pycuda.driver as cuda

        if self._ctx is None:
            cuda.init()
            self._ctx = cuda.Device(0).retain_primary_context()
        self._ctx.push()
        try:
            yield
        finally:
            self._ctx.pop()

    def _device(self):
        import pycuda.driver as cuda

        return cuda.Context.get_device()

    def device_name(self) -> str:
        with self.context():
            return self._device().name()

    def module(self, block: int, defines: dict | None = None):
        """This variant's module for ``block`` threads and ``defines`` (the
        class's by default), compiled once per (variant, block, device,
        options), then cached."""
        import pycuda.driver as cuda

        dev = self._device()
        major, minor = dev.compute_capability()
        arch = f"sm_{major}{minor}"
        defines = {"BLOCK": block, **(self.defines if defines is None else defines)}
        options = tuple(os.environ.get("TLS_NVCC_FLAGS", "").split())  # e.g. -lineinfo to profile
        key = (self.variant, block, dev.pci_bus_id(), arch, tuple(sorted(defines.items())), options)
        return KERNELS.get(key, lambda: cuda.module_from_buffer(
            nvcc_cubin(f"{self.variant}.cu", arch, defines, options)))

    def synchronize(self):
        if self._ctx is not None:
            import pycuda.driver as cuda

            with self.context():
                cuda.Context.synchronize()

    # ---- stages --------------------------------------------------------------------
    def upload(self, plan):
        import pycuda.gpuarray as ga

        n = plan.lc.size
        block = self.block_size or block_size_for(n)
        with self.context():
            why = self.refuses(plan)
            if why is not None:
                raise InputTooLarge(why)
            tp = plan.templates
            put = lambda x, dt: ga.to_gpu(np.ascontiguousarray(x, dtype=dt))  # noqa: E731
            return DeviceState(
                plan=plan, n=n, m=n + tp.maxwidth, block=block,
                t=put(plan.lc.t, np.float64), y=put(plan.lc.y, np.float64),
                w=put(plan.lc.w, np.float64),
                templates=(put(tp.widths, np.int32), put(tp.strides, np.int32),
                           put(tp.offsets, np.int64), put(tp.a, np.float64),
                           put(tp.overshoot, np.float64)),
            )

    def _scan_args(self, state, periods_batch, lo, hi):
        """(device lo, hi, template arrays, constants, outputs) of a scan launch."""
        import pycuda.gpuarray as ga

        tp = state.plan.templates
        b = len(lo)
        outs = (ga.empty(b, np.float64), ga.empty(b, np.int32), ga.empty(b, np.float64))
        args = (ga.to_gpu(np.ascontiguousarray(lo, np.int32)),
                ga.to_gpu(np.ascontiguousarray(hi, np.int32)),
                *state.templates, np.float64(tp.depth_min), np.float64(tp.signal_depth))
        return args, outs

    def _phase_args(self, state, lo, hi):
        """(lo, hi, template arrays, constants) and outputs of a phase_scan launch."""
        import pycuda.gpuarray as ga

        tp = state.plan.templates
        b = len(lo)
        widths, strides, _, _, overshoot = state.templates
        outs = (ga.empty(b, np.float64), ga.empty(b, np.int32), ga.empty(b, np.float64))
        args = (ga.to_gpu(np.ascontiguousarray(lo, np.int32)),
                ga.to_gpu(np.ascontiguousarray(hi, np.int32)),
                widths, strides, overshoot, *state.phase,
                np.float64(tp.depth_min), np.float64(tp.signal_depth))
        return args, outs

    def shared_limit(self, kernel, block) -> int:
        """Dynamic shared memory one block of ``kernel`` may opt into on this device."""
        import pycuda.driver as cuda

        optin = self._device().get_attribute(
            cuda.device_attribute.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
        return optin - self.module(block).get_function(kernel).shared_size_bytes

    def launch_phase_scan(self, kernel, state, lead, lo, hi, shared):
        """Launch ``kernel`` (simple_search or thrust_scan) with ``shared`` bytes."""
        import pycuda.driver as cuda

        fn = self.module(state.block).get_function(kernel)
        fn.set_attribute(cuda.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, shared)
        args, outs = self._phase_args(state, lo, hi)
        fn(*lead, np.int32(state.m), np.int32(state.cap), *args, *outs,
           block=(state.block, 1, 1), grid=(len(lo), 1), shared=shared)
        return self._stats(state, outs)

    def _stats(self, state, outs):
        gain, index, depth = (o.get() for o in outs)
        return PeriodStats.from_gains(state.plan, gain, index, depth)

    def max_batch_periods(self, plan):
        per_launch = max(1, int(LAUNCH_MACS // max(1, scan_macs(plan))))
        per_memory = max(1, MEMORY_BUDGET // max(1, self.scratch_bytes(plan)))
        return max(1, min(per_launch, per_memory))

    def scratch_bytes(self, plan) -> int:
        """Device bytes of batch scratch per period."""
        return 0


class FoldedScanBackend(PyCUDABackend):
    """Backends whose fold_sort leaves (rw, w, csum) per period in global
    memory for the shared ``scan_folded`` kernel."""

    def _folded_buffers(self, b, m):
        import pycuda.gpuarray as ga

        return (ga.empty(b * m, np.float64), ga.empty(b * m, np.float64),
                ga.empty(b * (m + 1), np.float64))

    def chi2_scan(self, state, folded, periods, lo, hi):
        with self.context():
            args, outs = self._scan_args(state, periods, lo, hi)
            fn = self.module(state.block).get_function("scan_folded")
            fn(*folded, np.int32(state.m), *args, *outs,
               block=(state.block, 1, 1), grid=(len(lo), 1))
            return self._stats(state, outs)

    def scratch_bytes(self, plan):
        return 8 * (3 * (plan.lc.size + plan.templates.maxwidth) + 1) + self.sort_bytes(plan)

    def sort_bytes(self, plan) -> int:
        raise NotImplementedError


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
            fn = self.module(state.block).get_function("basic_fold_sort")
            fn(state.t, state.y, state.w, np.int32(state.n), np.int32(n2), np.int32(state.m),
               ga.to_gpu(np.ascontiguousarray(periods, np.float64)), keys, order, *folded,
               block=(state.block, 1, 1), grid=(b, 1))
            return folded

    def sort_bytes(self, plan):
        return 12 * next_pow2(plan.lc.size)


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
            mod = self.module(block)
            keys = [ga.empty(b * padded, np.float64) for _ in range(2)]
            order = [ga.empty(b * padded, np.int32) for _ in range(2)]
            mod.get_function("thrust_tile_sort")(
                state.t, np.int32(state.n), np.int32(padded),
                ga.to_gpu(np.ascontiguousarray(periods, np.float64)), keys[0], order[0],
                block=(block, 1, 1), grid=(padded // (block * THRUST_ITEMS), b))
            merge = mod.get_function("thrust_merge_pass")
            width, src = block * THRUST_ITEMS, 0
            while width < padded:
                merge(np.int32(padded), np.int32(width), keys[src], order[src],
                      keys[1 - src], order[1 - src],
                      block=(block, 1, 1), grid=(-(-padded // block), b))
                width, src = 2 * width, 1 - src
            folded = self._folded_buffers(b, state.m)
            mod.get_function("thrust_gather")(
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
            return self.launch_phase_scan("thrust_scan", state, folded, lo, hi, shared)


class SimpleBackend(PyCUDABackend):
    """One fused kernel per (light curve, period), all in shared memory; small
    light curves. Every search runs packs (``backends.packing``): many light
    curves per launch in ``search_many``, a pack of one in ``search``, so both
    run the same kernel on the same data."""

    name = "simple"
    summary = ("approximate (float32 dot products), PyCUDA shared memory: fused fold, sort and scan; "
               "small n; packs many light curves")
    exact = False
    variant = "simple"
    fuses_fold_sort = True

    def __init__(self, block_size: int | None = None):
        super().__init__(block_size)
        self._pipeline = None

    def refuses(self, plan):
        tp = plan.templates
        need = simple_shared_bytes(plan.lc.size, tp.maxwidth, tp.strides)
        with self.context():
            limit = self.shared_limit("simple_search", self._block(plan.lc.size))
        if need > limit:
            return (f"backend 'simple' holds a light curve in shared memory: {plan.lc.size} points "
                    f"(+{tp.maxwidth} patch) need {need} bytes, the device allows {limit}; "
                    "use 'thrust' or 'basic' for this light curve")
        return None

    def _block(self, n):
        return self.block_size or block_size_for(n)

    def upload(self, plan):
        """The plan in packed form (host; the pack carries it to the device)."""
        why = self.refuses(plan)
        if why is not None:
            raise InputTooLarge(why)
        return plan, packed_curve(plan)

    def fold_sort(self, state, periods):
        raise NotImplementedError("'simple' folds, sorts and scans in one kernel (chi2_scan)")

    def chi2_scan(self, state, folded, periods, lo, hi):
        plan, curve = state
        job = packing.Job(curve, np.ascontiguousarray(periods, np.float64), lo, hi)
        return self._stats(plan, self._run([job])[0])

    def search(self, plan, periods, progress=None):
        """A pack of one light curve."""
        return self.search_many([(plan, periods)], progress)[0]

    def search_many(self, jobs, progress=None):
        """Every (plan, periods) job in packed launches (at most LAUNCH_MACS
        multiply-adds and MEMORY_BUDGET bytes each, one block size per launch),
        the host packing the next launch while the device runs this one.
        Raises ``InputTooLarge`` before any launch if a light curve does not
        fit. ``progress`` gets the number of periods of each finished launch."""
        jobs = [(plan, np.ascontiguousarray(periods, np.float64)) for plan, periods in jobs]
        for k, (plan, _) in enumerate(jobs):
            why = self.refuses(plan)
            if why is not None:
                raise InputTooLarge(why if len(jobs) == 1 else f"light curve {k}: {why}")
        with self.clock("duration_grid"):
            windows = [plan.width_windows(periods) for plan, periods in jobs]
        with self.clock("pack"):
            packed = [packing.Job(packed_curve(plan), periods, lo, hi)
                      for (plan, periods), (lo, hi) in zip(jobs, windows)]
        results = self._run(packed, progress)
        with self.clock("results"):
            return [self._stats(plan, r) for (plan, _), r in zip(jobs, results)]

    def _stats(self, plan, result):
        return PeriodStats.from_gains(plan, result["gain"], result["index"], result["depth"])

    def _run(self, jobs, progress=None):
        """Per job, its (gain, depth, index) arrays, from packed launches."""
        from backends.implementations.launch_pipeline import LaunchPipeline

        results = packing.empty_results(jobs)
        by_block = defaultdict(list)
        for k, job in enumerate(jobs):
            by_block[self._block(job.curve.t.size)].append(k)
        with self.context():
            if self._pipeline is None:
                self._pipeline = LaunchPipeline(self.timings)
            pipe = self._pipeline
            try:
                for block, members in by_block.items():
                    group = [jobs[k] for k in members]
                    into = [results[k] for k in members]
                    for pack in packing.packs(group, LAUNCH_MACS, MEMORY_BUDGET):
                        pipe.submit(pack, functools.partial(self._launch, block),
                                    functools.partial(self._finish, pack, into=into, progress=progress))
                pipe.drain()
            except BaseException:
                pipe.abandon()
                raise
        return results

    def _launch(self, block, pack, dev_in, dev_out, stream):
        import pycuda.driver as cuda

        fn = self.module(block).get_function("simple_search")
        fn.set_attribute(cuda.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, pack.shared)
        args = [np.uintp(dev_in + pack.offsets[name]) for name in packing.INPUTS]
        args += [np.uintp(dev_out + pack.out_offsets[name]) for name in ("gain", "index", "depth")]
        fn(*args, block=(block, 1, 1), grid=(pack.blocks, 1), shared=pack.shared, stream=stream)

    def _finish(self, pack, host_out, into, progress):
        with self.clock("results"):
            periods = pack.scatter(host_out, into)
        if progress is not None:
            progress(periods)
