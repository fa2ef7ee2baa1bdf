"""``pruned``: TLS's exact statistic on the GPU with the certified pruning
cascade of ``backends.pruning`` (the one the ``cpu`` backend runs): per period
a threshold from the exact gain at each width's deepest box, then per shift the
depth filter and a one-piece bound, a K-piece bound on the survivors (linear
pieces as ``cpu``'s; constant ones where the fold is in shared memory) and the
exact float64 dot products on what is left, typically 2-5 % of brute force's
multiply-adds (``results.meta["work"]``).

Two layouts (``pruned.cu``): a light curve whose fold and prefix sums fit in
shared memory (K2-size) is searched by one kernel, one block per period, with
every per-period array in shared memory; a longer one (TESS sectors,
100,000-point curves) by four kernels over arrays in global memory, allocated
from a memory pool, device memory bounded by batching periods. Both run the
same stages and count the same work. Everything is float64, so no float32
re-check is needed.

PyCUDA rather than CuPy: the kernels are one CUDA source with CUB block
primitives and ``simple``'s bucket sort, which PyCUDA loads as an nvcc cubin
from the shared kernel cache (on-disk, compile-checked in CI) in the device's
primary context like the other PyCUDA backends; CuPy's array operations would
add a sort and temporaries per stage.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass, replace

import numpy as np

from backends import pruning
from backends.implementations.event_clock import EventClock, mark
from backends.implementations.pycuda_base import PyCUDABackend, to_device
from backends.implementations.staged import Staged
from backends.protocol import PeriodStats

CHUNK_PER_THREAD = 8  # queue places per thread (pruned.cu's CHUNK)
MAX_PERIODS = 4096  # per batch: bounds a launch's length (progress, Ctrl-C)
FOLD_BLOCK, FOLD_BLOCK_MIN_N = 1024, 8192  # light curves this long fold with 1,024 threads
FOLD_BUCKETS = 24576  # pruned_fold's bucket counts in shared memory (96 KB: two blocks per SM)
POOL_KEEP_BYTES = 1 << 28  # pool memory kept across light-curve shapes (a K2-size search holds < 1 MB)
BATCH_BYTES = 8 << 30  # device memory a batch may take (and at most half the free memory): 78-day 89 -> 81.5 ms from 4 GiB (16: 78 ms)
SHARED_BLOCK = 512  # threads of pruned_period (128 registers each, no spills; 1,024 spill)
LAYOUTS = ("auto", "shared", "global")
# Template lengths below which the bounds (prune_min) or the K-piece bound
# (fine_min) are skipped, per layout: measured on the H100 (reports/gpu/
# pruned_flush_2026-11-23_H100/sweep_e89d913.*): bounds on every template cost
# least with the fold in shared memory (K2-like 20.9 -> 17.2 ms), 32 in global.
NULL = np.intp(0)  # a null device pointer as a PyCUDA kernel argument
STAGE_MIN = {"shared": (1, pruning.FINE_MIN_LENGTH), "global": (pruning.PRUNE_MIN_LENGTH, pruning.FINE_MIN_LENGTH)}


@dataclass
class PrunedState:
    """The plan on the device (``DeviceState``) plus the pruning tables and
    the layout: ``shared`` (pruned_period) or global memory."""

    base: object
    tables: dict
    shared: bool


PER_PERIOD = ("periods", "lo", "hi", "threshold", "gain", "index", "depth")  # ScanArrays' per-period arrays
OUTS = ("gain", "index", "depth")  # the best fit of each period: gain, width index, depth


@dataclass
class ScanArrays:
    """One search's arrays on the device, in one ``Staged`` allocation from
    the pool: per period (``PER_PERIOD``: periods, width windows, thresholds,
    ``OUTS``), job offsets ``starts`` (``slots`` widths per period) and the
    work ``counters``; plus the cascade's constants. ``view`` is a batch's
    part: ``arg(name)`` then points at the batch's first period."""

    staged: object
    size: int
    slots: int
    cascade: tuple
    first: int = 0

    def view(self, start, stop) -> "ScanArrays":
        return replace(self, first=self.first + start, size=stop - start)

    def arg(self, name):
        """Device address of ``name`` for this batch (a kernel argument)."""
        return self.staged.pointer(name, self.first if name in PER_PERIOD else 0)

    def args(self, *names) -> tuple:
        return tuple(self.arg(name) for name in names)


class PrunedBackend(PyCUDABackend):
    """Exact pruned scan: seed, one-piece bound, K-piece bound, exact survivors."""

    name = "pruned"
    summary = "exact, PyCUDA: certified pruning cascade (bounds, then exact float64 survivors); any n"
    variant = "pruned"
    defines: dict = {}

    def __init__(self, block_size: int | None = None, debug: bool = False, layout: str = "auto",
                 prune_min: int | None = None, fine_min: int | None = None):
        """``layout``: "shared" (one kernel, fold in shared memory), "global"
        (any n) or "auto" (shared where the fold fits). Templates shorter than
        ``prune_min`` samples skip the bounds, shorter than ``fine_min`` the
        K-piece bound (``pruning.tuning``: exact either way; default: the
        layout's, ``STAGE_MIN``)."""
        super().__init__(block_size)
        if layout not in LAYOUTS:
            raise ValueError(f"layout must be one of {LAYOUTS}, not {layout!r}")
        if any(v is not None and v < 1 for v in (prune_min, fine_min)):
            raise ValueError(f"prune_min and fine_min must be at least 1, not {prune_min}, {fine_min}")
        self.debug = bool(debug)
        self.layout = layout
        self.stage_min = (prune_min, fine_min)
        self._pool = None
        self._pool_shape = None

    def _allocate(self, nbytes):
        """Device memory from this backend's memory pool (no cuMemAlloc per batch)."""
        from pycuda.tools import DeviceMemoryPool

        if self._pool is None:
            self._pool = DeviceMemoryPool()
        return self._pool.allocate(nbytes)

    def _empty(self, size, dtype):
        """A device array from the memory pool."""
        import pycuda.gpuarray as ga

        return ga.empty(int(size), dtype, allocator=self._allocate)

    def search(self, plan, periods, progress=None):
        """As every backend; the memory pool keeps its blocks for the next
        light curve of the same shape, and of another only while it holds
        little (``POOL_KEEP_BYTES``): processes sharing a GPU (validation
        --jobs) that kept every size they ever made held 80 GB on the H100 and
        fell to one-period batches, while re-allocating for each search costs
        ~10 ms on a TESS sector, and a K2 survey's curves differ in length."""
        shape = (plan.lc.size, plan.templates.maxwidth)
        if self._pool is not None and shape != self._pool_shape and self._pool.managed_bytes > POOL_KEEP_BYTES:
            with self.context():
                self._pool.free_held()
        self._pool_shape = shape
        return super().search(plan, periods, progress)

    def _put(self, array, dtype):
        out = self._empty(np.size(array), dtype)
        out.set(np.ascontiguousarray(array, dtype))
        return out

    def upload(self, plan):
        base = super().upload(plan)
        with self.context():
            tables = self.device_templates(plan.templates)[1]
        return PrunedState(base, tables, self.folds_in_scan(plan))

    def template_sources(self, tp):
        """The templates and their pruning tables (a test may swap the tables)."""
        return (tp, tp.pieces)

    def template_arrays(self, tp):
        """The templates, then the pruning tables of every width."""
        pc, put = tp.pieces, to_device
        tables = dict(
            kscale=put(tp.overshoot / tp.signal_depth, np.float64),
            sum_a2=put(pc.sum_a2, np.float64),
            n_pieces=put(pc.n_pieces, np.int32), bounds=put(pc.bounds, np.int32),
            inv_n=put(pc.inv_n, np.float64), c=put(pc.c, np.float64),
            c2=put(pc.c2, np.float64), rho=put(pc.rho, np.float64),
            rho2=put(pc.rho2, np.float64), mean=put(pc.mean, np.float64),
            amax=put(pc.amax, np.float64), sum_c=put(pc.sum_c, np.float64),
            s_max=put(pruning.depth_limits(tp.widths, tp.depth_min), np.float64),
            line_n=put(pc.line_pieces, np.int32), line_bounds=put(pc.line_bounds, np.int32),
            line_c=put(pc.line_c, np.float64), line_slope=put(pc.line_slope, np.float64),
            line_centre=put(pc.line_centre, np.float64), line_rho=put(pc.line_rho, np.float64),
            line_terms=put(np.column_stack([np.abs(pc.line_c).sum(axis=1), np.abs(pc.line_slope).sum(axis=1),
                                            pc.line_defects]), np.float64),
        )
        return (*super().template_arrays(tp), tables)

    @staticmethod
    def shared_doubles(plan) -> int:
        """pruned_period's dynamic shared memory in doubles: rw, cs, pu, pu2 and,
        with weights that differ, w, pw, pw2 (M samples, prefix sums M + 1)."""
        m = plan.lc.size + plan.templates.maxwidth
        return 4 * m + 3 if plan.lc.uniform_weight else 7 * m + 5

    def refuses(self, plan):
        why = super().refuses(plan)
        if why is None and self.layout == "shared" and not self._fits(plan):
            return (f"backend 'pruned' (layout 'shared') holds a fold of {plan.lc.size} points in "
                    f"{8 * self.shared_doubles(plan)} bytes of shared memory; this GPU allows "
                    f"{self._period_shared(plan)} (use layout 'global' or 'auto')")
        return why

    def folds_in_scan(self, plan) -> bool:
        """Whether this search runs pruned_period, which folds in its scan
        (``layout``; "auto": where the fold fits in shared memory)."""
        return self.layout != "global" and self._fits(plan)

    def _fits(self, plan) -> bool:
        return 8 * self.shared_doubles(plan) <= self._period_shared(plan)

    def _period_shared(self, plan) -> int:
        """The dynamic shared memory pruned_period may take for ``plan``'s fold:
        the opt-in limit less the kernel's static memory; the opt-in limit
        alone where the fold exceeds it (nothing compiled for such a fold)."""
        limit = self.optin_shared()
        if 8 * self.shared_doubles(plan) > limit:
            return limit
        return self.shared_limit("pruned_period", SHARED_BLOCK)

    def fold_sort(self, state, periods):
        """Per period (rows of b x n): the sample indices in (phase, index)
        order, as the cpu backend's stable sort gives them; the prefix sums
        gather the patched fold's flux and weights through it."""
        with self.context():
            return self._fold(state, self._put(periods, np.float64), len(periods))

    def _fold(self, state, periods, b):
        """pruned_fold of the ``b`` periods at device address ``periods``, queued; the pooled
        scratch goes back to the pool in the device's context (a pooled array
        freed without one aborts), to be reused by later launches in stream order."""
        import pycuda.driver as cuda

        base = state.base
        n = base.n
        keys, order = self._empty(b * n, np.float64), self._empty(b * n, np.int32)
        block = FOLD_BLOCK if n >= FOLD_BLOCK_MIN_N else base.block
        buckets = min(n, FOLD_BUCKETS)
        fn = self.module(block).get_function("pruned_fold")
        fn.set_attribute(cuda.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, 4 * buckets)
        fn(base.t, np.int32(n), np.int32(buckets), periods, keys, order,
           block=(block, 1, 1), grid=(b, 1), shared=4 * buckets)
        return order

    def scratch_bytes(self, plan):
        """Device bytes per period: sort keys and order (12 n), u and folded
        weights (2 x 8 M), cumulative flux and five prefix sums (6 x 8 (M + 1))."""
        n, m = plan.lc.size, plan.lc.size + plan.templates.maxwidth
        return 12 * n + 16 * m + 48 * (m + 1)

    def max_batch_periods(self, plan):
        import pycuda.driver as cuda

        if self.folds_in_scan(plan):
            return MAX_PERIODS
        with self.context():
            free, _ = cuda.mem_get_info()
        budget = min(BATCH_BYTES, free // 2)
        return int(np.clip(budget // self.scratch_bytes(plan), 1, MAX_PERIODS))

    @staticmethod
    def chunk(block) -> int:
        """Places in each of the scan's shared queues (pruned.cu's CHUNK); the
        fold-only module of FOLD_BLOCK threads takes 2,048, which keeps its
        (unused) pruned_period within 48 KiB of static shared memory."""
        return CHUNK_PER_THREAD * (block if block <= SHARED_BLOCK else 256)

    def kernel_defines(self, block):
        return {"CHUNK": self.chunk(block)}

    @staticmethod
    def _table_args(state) -> tuple:
        """pruned.cu's TABLE_PARAMS: template and piece tables of every width."""
        widths, strides, offsets, a, overshoot = state.base.templates
        tab, pieces = state.tables, state.base.plan.templates.pieces
        return (widths, strides, offsets, a, tab["kscale"], tab["sum_a2"], overshoot,
                tab["n_pieces"], tab["bounds"], tab["inv_n"], tab["c"], tab["c2"], tab["rho"],
                tab["rho2"], tab["mean"], tab["amax"], tab["sum_c"], tab["s_max"], tab["line_n"],
                tab["line_bounds"], tab["line_c"], tab["line_slope"], tab["line_centre"],
                tab["line_rho"], tab["line_terms"], np.int32(pieces.k_max), np.int32(pieces.k_lines))

    def search_batches(self, state, plan, periods, lo, hi, progress=None):
        """The protocol's batches, queued: the host launches batch k + 1 while
        the device runs batch k (at most two in flight, so Ctrl-C waits for
        little), stage times from CUDA events, results read once at the end.
        A batch's scratch goes back to the pool once its launches are queued
        and is reused by the next batch in stream order. Each batch's host
        work (uploads, argument packing, reads: ~1-2 ms) no longer idles the device."""
        with self.context():  # events and pooled arrays must be freed in it: a frame of their own
            return self._search_queued(state, plan, periods, lo, hi, progress)

    def _search_queued(self, state, plan, periods, lo, hi, progress):
        step = max(1, int(self.max_batch_periods(plan)))
        arrays = self._scan_arrays(state, periods, lo, hi)
        clock = EventClock(self.timings)
        in_flight = collections.deque()
        for start in range(0, arrays.size, step):
            batch = arrays.view(start, min(start + step, arrays.size))
            self._queue_batch(state, batch, clock)
            in_flight.append((mark(), batch.size))
            if len(in_flight) > 1:
                self._wait(*in_flight.popleft(), progress)
        while in_flight:
            self._wait(*in_flight.popleft(), progress)
        clock.settle()
        return self._results(plan, arrays, lo, hi)

    @staticmethod
    def _wait(done, size, progress):
        done.synchronize()
        if progress is not None:
            progress(size)

    def _queue_batch(self, state, batch, clock):
        folded = None
        if not state.shared:
            with clock.stage("fold_sort"):
                folded = self._fold(state, batch.arg("periods"), batch.size)
        with clock.stage("chi2_scan"):
            self._scan(state, folded, batch, clock)

    def chi2_scan(self, state, folded, periods, lo, hi):
        with self.context():
            return self._scan_now(state, folded, periods, lo, hi)

    def _scan_now(self, state, folded, periods, lo, hi):
        arrays = self._scan_arrays(state, periods, lo, hi)
        clock = EventClock(self.timings)
        self._scan(state, folded, arrays, clock)
        clock.settle()
        return self._results(state.base.plan, arrays, lo, hi)

    def _scan_arrays(self, state, periods, lo, hi) -> ScanArrays:
        """``ScanArrays`` of ``periods``, uploaded in one copy before any launch
        (a synchronous copy would wait for the launches queued before it)."""
        layout = STAGE_MIN["shared" if state.shared else "global"]
        g, pad, prune_min, fine_min = pruning.tuning(
            state.base.m, *(mine or default for mine, default in zip(self.stage_min, layout)))
        b = len(periods)
        slots = max(1, int(np.max(hi - lo, initial=0)))  # widths per period (pruned.cu's jobs by index)
        per_job = not state.shared  # pruned_period reads neither job offsets nor thresholds
        starts = np.arange(b + 1 if per_job else 0, dtype=np.int32) * slots
        threshold = np.zeros(b if per_job else 0, np.uint64)
        staged = Staged([
            ("periods", np.asarray(periods, np.float64)), ("lo", np.asarray(lo, np.int32)),
            ("hi", np.asarray(hi, np.int32)), ("starts", starts), ("threshold", threshold),
            ("counters", np.zeros(len(pruning.COUNTERS), np.uint64)),
            ("gain", (np.float64, b)), ("index", (np.int32, b)), ("depth", (np.float64, b)),
        ], self._allocate)
        cascade = (np.float64(g), np.float64(pad), np.int32(prune_min), np.int32(fine_min))
        return ScanArrays(staged, b, slots, cascade)

    def _results(self, plan, arrays, lo, hi):
        """The search's work counters and ``PeriodStats`` (one copy back; waits for the device)."""
        found = arrays.staged.read(("counters", *OUTS))
        pruning.add_work(self.work, found["counters"], plan, lo, hi, self.debug)
        return PeriodStats.from_gains(plan, *(found[name] for name in OUTS))

    def _scan(self, state, folded, arrays, clock):
        if state.shared:
            self._scan_shared(state, arrays)
        else:
            self._scan_global(state, folded, arrays, clock)

    def _scan_shared(self, state, arrays):
        """pruned_period: one block per period, everything in shared memory."""
        import pycuda.driver as cuda

        base = state.base
        fn = self.module(SHARED_BLOCK).get_function("pruned_period")
        shared = 8 * self.shared_doubles(base.plan)
        fn.set_attribute(cuda.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, shared)
        fn(base.t, base.y, base.w, np.int32(base.n), np.int32(base.m), *arrays.args("periods", "lo", "hi"),
           *self._table_args(state), np.float64(base.plan.lc.uniform_weight), *arrays.cascade,
           np.int32(self.debug), *arrays.args(*OUTS, "counters"),
           block=(SHARED_BLOCK, 1, 1), grid=(arrays.size, 1), shared=shared)

    def _scan_global(self, state, folded, arrays, clock):
        """Prefix sums, seeds, one block per (period, width) job, reduction."""
        base, block = state.base, state.base.block
        n, m, b = base.n, base.m, arrays.size
        w_uniform = np.float64(base.plan.lc.uniform_weight)
        tables = self._table_args(state)
        mod = self.module(block)
        rw = self._empty(b * m, np.float64)
        sums = [self._empty(b * (m + 1), np.float64) for _ in range(3)]  # cs, pu, pu2
        pj = self._empty(b * (m + 1), np.float64)  # the linear bound's moments
        if w_uniform > 0.0:  # uniform weights: the scan takes the one weight, no wf, pw, pw2
            w, wf, weight_sums = NULL, NULL, [NULL, NULL]
        else:
            w, wf = base.w, self._empty(b * m, np.float64)
            weight_sums = [self._empty(b * (m + 1), np.float64) for _ in range(2)]
        prefix = sums + weight_sums
        scales = self._empty(4 * b, np.float64)
        launch = dict(block=(block, 1, 1), grid=(b, 1))
        with clock.stage("chi2_scan.prefix"):
            mod.get_function("pruned_prefix")(base.y, w, folded, w_uniform, np.int32(n), np.int32(m), rw, wf,
                                              *prefix, pj, scales, **launch)
        data = (rw, wf, *prefix)
        windows = (*arrays.args("lo", "hi"), np.int32(arrays.slots))
        jobs = b * arrays.slots
        launch = dict(block=(block, 1, 1), grid=(jobs, 1))
        with clock.stage("chi2_scan.seed"):
            mod.get_function("pruned_seed")(*data, np.int32(m), np.int32(n), *windows, *tables, w_uniform,
                                            *arrays.args("threshold", "counters"), **launch)
        job_outs = (self._empty(jobs, np.float64), self._empty(jobs, np.int32), self._empty(jobs, np.float64))
        with clock.stage("chi2_scan.cascade"):
            mod.get_function("pruned_scan")(*data, pj, scales, np.int32(m), np.int32(n), *windows, *tables,
                                            w_uniform, *arrays.cascade, arrays.arg("threshold"),
                                            np.int32(self.debug), *job_outs, arrays.arg("counters"), **launch)
        with clock.stage("chi2_scan.reduce"):
            mod.get_function("reduce_jobs")(*job_outs, arrays.arg("starts"), np.int32(b), *arrays.args(*OUTS),
                                            block=(128, 1, 1), grid=(-(-b // 128), 1))
