"""What the PyCUDA backends (``basic``, ``simple``, ``thrust``, ``pruned``)
share: the device's primary context, the compiled-kernel cache, the plan's
upload (``DeviceState``), the per-launch work and memory budgets, and the
host side of the float32 polyphase scan that ``simple`` and ``thrust`` run.

The fold is float64 (absolute BKJD/BTJD times fold exactly as on the CPU).
``simple`` and ``thrust`` are approximate by TLS's own contract (per-period
chi2 within ~1e-5 relative, not 1e-10): they form the two template dot
products in float32 on polyphase copies of the fold (``phase_scan.cuh``); box
depth, depth and gain stay float64, and chi2 = chi2_flat - gain is formed on
the host in float64. PyCUDA is imported lazily and works in the device's
primary context, so it shares one process (and context) with CuPy and
numba.cuda.
"""

from __future__ import annotations

import contextlib
import os
import traceback
from dataclasses import dataclass

import numpy as np

from backends.bounded_cache import BoundedCache
from backends.gpu import checked_block_size, missing_requirements
from backends.implementations.staged import PINNED, Staged
from backends.kernel_cache import KernelCache, nvcc_cubin
from backends.protocol import InputTooLarge, PeriodStats, TLSBackend

KERNELS = KernelCache(maxsize=32)
BLOCK_SIZES = (32, 64, 128, 256)
MEMORY_BUDGET = 1 << 30  # device bytes of batch scratch
# Multiply-adds per scan launch: a whole K2-like grid (1.1e11) in one launch,
# ~25 ms on an H200 (2e10, six launches, cost 6 ms more: host syncs and tail waves).
LAUNCH_MACS = 1.2e11
SHIFTS_PER_THREAD = 8  # phase_scan.cuh's SHIFTS_PER_THREAD


def release_cached():
    """Let the process's compiled modules and page-locked buffers go here:
    call in the thread that searched, whose GPU context they belong to (a
    Dask worker's task thread, at the end of a run). Left to the interpreter's
    exit, in another thread, PyCUDA warns that it cannot free them."""
    KERNELS.clear()
    PINNED.clear()


def to_device(array, dtype):
    """``array`` as a contiguous ``dtype`` array on the current context's device."""
    import pycuda.gpuarray as ga

    return ga.to_gpu(np.ascontiguousarray(array, dtype=dtype))


def block_size_for(n: int) -> int:
    """Threads per block from the number of samples. The 32/64/128/256 rule
    of thumb was replaced by a measurement for n >= 2000 (H200, n = 4,320 and
    18,000: 256 fastest or within noise for every variant, see reports/gpu)."""
    if n < 500:
        return 32
    if n < 2000:
        return 128
    return 256


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


TEMPLATE_NAMES = ("widths", "strides", "offsets", "a", "overshoot")  # what every PyCUDA scan reads
TEMPLATE_TABLES = 8  # templates objects whose device tables a backend keeps (a K2-like survey's: ~5, ~0.2 MB each)
OUTS = ("gain", "index", "depth")  # a scan's best fit per period


@dataclass
class DeviceState:
    """A plan's arrays on the device plus the launch shape used for them."""

    plan: object
    n: int
    m: int
    block: int
    t: object  # device addresses in ``samples``
    y: object
    w: object
    tables: object  # the Staged allocation of the backend's template_sections(plan.templates)
    samples: object = None  # the Staged allocation holding t, y and w

    @property
    def templates(self) -> tuple:
        """Device addresses of TEMPLATE_NAMES."""
        return self.tables.pointers(*TEMPLATE_NAMES)

    @property
    def cap(self) -> int:
        return phase_capacity(self.m, self.plan.templates.strides)


class PyCUDABackend(TLSBackend):
    """Shared PyCUDA plumbing: primary context, kernel cache, upload, batch budgets."""

    device = "gpu"
    variant = ""  # backends/cuda/<variant>.cu
    defines: dict = {}

    def __init__(self, block_size: int | None = None):
        super().__init__()
        self.block_size = checked_block_size(block_size, BLOCK_SIZES)
        self._ctx = None
        self._optin = None  # the device's opt-in shared memory per block, read once
        self._identity = None  # (PCI bus id, compute capability) of the device, read once: module() runs per launch
        self._shared_limits = {}  # (kernel, block) -> shared_limit
        self._functions = {}  # (kernel, block) -> (module, function, dynamic shared memory allowed)
        self._templates = BoundedCache(TEMPLATE_TABLES)  # template_sources -> their Staged tables

    @classmethod
    def missing(cls):
        return missing_requirements(packages=("pycuda",), nvcc=True)

    # ---- context and kernels -------------------------------------------------------
    @contextlib.contextmanager
    def context(self):
        """The device's primary context, current for the duration. An error
        leaving it clears the locals of the frames it passed through first:
        their device memory and events are freed with the context current
        (PyCUDA leaks them otherwise), not when the traceback goes."""
        import pycuda.driver as cuda

        if self._ctx is None:
            cuda.init()
            self._ctx = cuda.Device(0).retain_primary_context()
        self._ctx.push()
        try:
            yield
        except BaseException as exc:
            traceback.clear_frames(exc.__traceback__)
            raise
        finally:
            self._ctx.pop()

    def _device(self):
        import pycuda.driver as cuda

        return cuda.Context.get_device()

    def device_name(self) -> str:
        with self.context():
            return self._device().name()

    def kernel_defines(self, block: int) -> dict:
        """Preprocessor defines of this variant's module for ``block`` threads."""
        return self.defines

    def module(self, block: int):
        """This variant's module for ``block`` threads (``kernel_defines``),
        compiled once per (variant, block, device, defines, options), then cached."""
        import pycuda.driver as cuda

        bus, (major, minor) = self.identity()
        arch = f"sm_{major}{minor}"
        defines = {"BLOCK": block, **self.kernel_defines(block)}
        options = tuple(os.environ.get("TLS_NVCC_FLAGS", "").split())  # e.g. -lineinfo to profile
        key = (self.variant, block, bus, arch, tuple(sorted(defines.items())), options)
        return KERNELS.get(key, lambda: cuda.module_from_buffer(
            nvcc_cubin(f"{self.variant}.cu", arch, defines, options)))

    def identity(self) -> tuple:
        """(PCI bus id, compute capability) of the device, read once. Call in the context."""
        if self._identity is None:
            dev = self._device()
            self._identity = (dev.pci_bus_id(), dev.compute_capability())
        return self._identity

    def function(self, kernel, block, shared=0):
        """``kernel`` of ``module(block)``, allowed ``shared`` bytes of dynamic
        shared memory: looked up once per module, its limit raised only where
        a launch needs more (launches ask for it every batch)."""
        import pycuda.driver as cuda

        mod = self.module(block)
        kept = self._functions.get((kernel, block))
        if kept is None or kept[0] is not mod:
            kept = (mod, mod.get_function(kernel), 0)
        if shared > kept[2]:
            kept[1].set_attribute(cuda.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, shared)
            kept = (mod, kept[1], shared)
        self._functions[kernel, block] = kept
        return kept[1]

    def synchronize(self):
        if self._ctx is not None:
            import pycuda.driver as cuda

            with self.context():
                cuda.Context.synchronize()

    # ---- stages --------------------------------------------------------------------
    def _block(self, n):
        """Threads per block: the backend's ``block_size``, else block_size_for(n)."""
        return self.block_size or block_size_for(n)

    def _allocate(self, nbytes):
        """Device memory for a search's ``Staged`` arrays (cuMemAlloc; a
        ``PooledScratch`` backend's pool). Call in the context."""
        import pycuda.driver as cuda

        return cuda.mem_alloc(nbytes)

    def upload(self, plan):
        n = plan.lc.size
        block = self._block(n)
        with self.context():
            why = self.refuses(plan)
            if why is not None:
                raise InputTooLarge(why)
            samples = Staged([("tyw", plan.lc.samples)], self._allocate)
            return DeviceState(
                plan=plan, n=n, m=n + plan.templates.maxwidth, block=block,
                t=samples.pointer("tyw"), y=samples.pointer("tyw", n), w=samples.pointer("tyw", 2 * n),
                tables=self.device_templates(plan.templates), samples=samples,
            )

    def device_templates(self, tp):
        """``template_sections(tp)`` in one allocation (``Staged``), built and
        uploaded once for each of the last TEMPLATE_TABLES templates objects (a
        plan searched again; a survey's light curves, whose few lengths share
        TLS's template cache, in any order), keyed on which sources they are.
        Call inside the backend's context (an entry evicted is freed in it)."""
        import pycuda.driver as cuda

        return self._templates.get_by_identity(self.template_sources(tp),
                                               lambda: Staged(self.template_sections(tp), cuda.mem_alloc))

    def template_sources(self, tp) -> tuple:
        """The host objects ``template_sections(tp)`` is made from (compared by identity)."""
        return (tp,)

    def template_sections(self, tp) -> list:
        """(name, array) pairs of ``tp`` the kernels read: TEMPLATE_NAMES."""
        return [("widths", np.asarray(tp.widths, np.int32)), ("strides", np.asarray(tp.strides, np.int32)),
                ("offsets", np.asarray(tp.offsets, np.int64)), ("a", np.asarray(tp.a, np.float64)),
                ("overshoot", np.asarray(tp.overshoot, np.float64))]

    def optin_shared(self) -> int:
        """Shared memory one block may opt into on this device, read once."""
        import pycuda.driver as cuda

        if self._optin is None:
            with self.context():
                self._optin = self._device().get_attribute(cuda.device_attribute.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
        return self._optin

    def shared_limit(self, kernel, block) -> int:
        """Dynamic shared memory one block of ``kernel`` may opt into on this
        device (its static memory off), learnt once per (kernel, block): backends
        ask for every light curve (``refuses``) or batch."""
        key = (kernel, block)
        if key not in self._shared_limits:
            with self.context():
                static = self.function(kernel, block).shared_size_bytes
            self._shared_limits[key] = self.optin_shared() - static
        return self._shared_limits[key]

    def max_batch_periods(self, plan):
        per_launch = max(1, int(LAUNCH_MACS // max(1, scan_macs(plan))))
        per_memory = max(1, MEMORY_BUDGET // max(1, self.scratch_bytes(plan)))
        return max(1, min(per_launch, per_memory))

    def scratch_bytes(self, plan) -> int:
        """Device bytes of batch scratch per period."""
        return 0


class FoldedScanBackend(PyCUDABackend):
    """Backends (``basic``, ``thrust``) whose fold_sort leaves (rw, w, csum)
    per period in global memory for the shared ``scan_folded`` kernel."""

    def _folded_buffers(self, b, m):
        import pycuda.gpuarray as ga

        return (ga.empty(b * m, np.float64), ga.empty(b * m, np.float64),
                ga.empty(b * (m + 1), np.float64))

    def _scan_launch(self, state, kernel, folded, front, templates, lo, hi, shared=0):
        """``kernel`` over the folded batch: its arguments are ``folded``,
        ``front``, lo and hi, ``templates``, the depth constants, then the
        outputs (OUTS); lo, hi and the outputs in one allocation (``Staged``),
        read back in one copy. Call inside the backend's context."""
        tp, b = state.plan.templates, len(lo)
        io = Staged([("lo", np.asarray(lo, np.int32)), ("hi", np.asarray(hi, np.int32)),
                     *((name, (dtype, b)) for name, dtype in zip(OUTS, (np.float64, np.int32, np.float64)))],
                    self._allocate)
        self.function(kernel, state.block, shared)(
            *folded, *front, *io.pointers("lo", "hi"), *templates, np.float64(tp.depth_min),
            np.float64(tp.signal_depth), *io.pointers(*OUTS), block=(state.block, 1, 1), grid=(b, 1), shared=shared)
        found = io.read(OUTS)
        return PeriodStats.from_gains(state.plan, *(found[name] for name in OUTS))

    def chi2_scan(self, state, folded, periods, lo, hi):
        with self.context():
            return self._scan_launch(state, "scan_folded", folded, (np.int32(state.m),), state.templates, lo, hi)

    def scratch_bytes(self, plan):
        return 8 * (3 * (plan.lc.size + plan.templates.maxwidth) + 1) + self.sort_bytes(plan)

    def sort_bytes(self, plan) -> int:
        raise NotImplementedError
