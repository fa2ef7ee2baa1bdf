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

from dataclasses import dataclass

import numpy as np

from backends import pruning
from backends.implementations.pycuda_base import PyCUDABackend, to_device
from backends.protocol import PeriodStats

CHUNK_PER_THREAD = 8  # queue places per thread (pruned.cu's CHUNK)
MAX_PERIODS = 4096  # per batch: bounds a launch's length (progress, Ctrl-C)
FOLD_BLOCK, FOLD_BLOCK_MIN_N = 1024, 8192  # light curves this long fold with 1,024 threads
FOLD_BUCKETS = 24576  # pruned_fold's bucket counts in shared memory (96 KB: two blocks per SM)
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

    def _empty(self, size, dtype):
        """A device array from this backend's memory pool (no cuMemAlloc per batch)."""
        import pycuda.gpuarray as ga
        from pycuda.tools import DeviceMemoryPool

        if self._pool is None:
            self._pool = DeviceMemoryPool()
        return ga.empty(int(size), dtype, allocator=self._pool.allocate)

    def search(self, plan, periods, progress=None):
        """As every backend; the memory pool keeps the blocks of one light-curve
        shape only: processes sharing a GPU (validation --jobs) that kept every
        size they ever made held 80 GB on the H100 and fell to one-period
        batches, while re-allocating for each search of the same shape costs
        ~10 ms on a TESS sector."""
        shape = (plan.lc.size, plan.templates.maxwidth)
        if self._pool is not None and shape != self._pool_shape:
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
        """Per period (rows of b x M): the patched flux and weights in phase
        order (weights None where they are uniform: the scan takes the one weight)."""
        with self.context():
            return self._fold(state, periods)

    def _fold(self, state, periods):
        """fold_sort in the device's context: its scratch arrays go back to the
        pool before the context is left (a pooled array freed without one aborts)."""
        import pycuda.driver as cuda

        base = state.base
        b, n, m = len(periods), base.n, base.m
        keys, order = self._empty(b * n, np.float64), self._empty(b * n, np.int32)
        uniform = base.plan.lc.uniform_weight > 0.0
        f, w = self._empty(b * m, np.float64), None if uniform else self._empty(b * m, np.float64)
        block = FOLD_BLOCK if n >= FOLD_BLOCK_MIN_N else base.block
        buckets = min(n, FOLD_BUCKETS)
        fn = self.module(block).get_function("pruned_fold")
        fn.set_attribute(cuda.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, 4 * buckets)
        fn(base.t, base.y, base.w, np.int32(n), np.int32(m), np.int32(buckets),
           self._put(periods, np.float64), keys, order, f, NULL if w is None else w,
           block=(block, 1, 1), grid=(b, 1), shared=4 * buckets)
        return f, w

    def scratch_bytes(self, plan):
        """Device bytes per period: sort scratch (12 n), folded flux and
        weights, u (3 x 8 M), cumulative flux and five prefix sums (6 x 8 (M + 1))."""
        n, m = plan.lc.size, plan.lc.size + plan.templates.maxwidth
        return 12 * n + 24 * m + 48 * (m + 1)

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

    def chi2_scan(self, state, folded, periods, lo, hi):
        base, plan = state.base, state.base.plan
        layout = STAGE_MIN["shared" if state.shared else "global"]
        g, pad, prune_min, fine_min = pruning.tuning(
            base.m, *(mine or default for mine, default in zip(self.stage_min, layout)))
        cascade = (np.float64(g), np.float64(pad), np.int32(prune_min), np.int32(fine_min))
        with self.context():
            counters = self._put(np.zeros(len(pruning.COUNTERS)), np.uint64)
            b = len(periods)
            gain, index, depth = (self._empty(b, np.float64), self._empty(b, np.int32),
                                  self._empty(b, np.float64))
            scan = self._scan_shared if state.shared else self._scan_global
            scan(state, folded, periods, lo, hi, cascade, counters, (gain, index, depth))
            pruning.add_work(self.work, counters.get(), plan, lo, hi, self.debug)
            return PeriodStats.from_gains(plan, gain.get(), index.get(), depth.get())

    def _scan_shared(self, state, folded, periods, lo, hi, cascade, counters, outs):
        """pruned_period: one block per period, everything in shared memory."""
        import pycuda.driver as cuda

        base = state.base
        fn = self.module(SHARED_BLOCK).get_function("pruned_period")
        shared = 8 * self.shared_doubles(base.plan)
        fn.set_attribute(cuda.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, shared)
        fn(base.t, base.y, base.w, np.int32(base.n), np.int32(base.m),
           self._put(periods, np.float64), self._put(lo, np.int32), self._put(hi, np.int32),
           *self._table_args(state), np.float64(base.plan.lc.uniform_weight), *cascade,
           np.int32(self.debug), *outs, counters,
           block=(SHARED_BLOCK, 1, 1), grid=(len(periods), 1), shared=shared)

    def _scan_global(self, state, folded, periods, lo, hi, cascade, counters, outs):
        """Prefix sums, seeds, one block per (period, width) job, reduction."""
        base, block = state.base, state.base.block
        n, m, b = base.n, base.m, len(periods)
        g, pad, prune_min, fine_min = cascade
        w_uniform = np.float64(base.plan.lc.uniform_weight)
        tables = self._table_args(state)
        mod = self.module(block)
        f, w = folded
        rw = self._empty(b * m, np.float64)
        sums = [self._empty(b * (m + 1), np.float64) for _ in range(3)]  # cs, pu, pu2
        pj = self._empty(b * (m + 1), np.float64)  # the linear bound's moments
        if w is None:  # uniform weights: no folded weights, no pw, pw2
            w, weight_sums = NULL, [NULL, NULL]
        else:
            weight_sums = [self._empty(b * (m + 1), np.float64) for _ in range(2)]
        prefix = sums + weight_sums
        scales = self._empty(4 * b, np.float64)
        self._launch("chi2_scan.prefix", mod, "pruned_prefix", f, w, w_uniform, np.int32(m), rw,
                     *prefix, pj, scales, block=(block, 1, 1), grid=(b, 1))
        data = (rw, w, *prefix)
        threshold = self._put(np.zeros(b), np.uint64)
        # jobs by index (pruned.cu): `slots` widths per period
        slots = max(1, int(np.max(hi - lo, initial=0)))
        windows = (self._put(lo, np.int32), self._put(hi, np.int32), np.int32(slots))
        self._launch("chi2_scan.seed", mod, "pruned_seed", *data, np.int32(m), np.int32(n),
                     *windows, *tables, w_uniform, threshold, counters,
                     block=(block, 1, 1), grid=(b * slots, 1))
        jobs = b * slots
        job_outs = (self._empty(jobs, np.float64), self._empty(jobs, np.int32),
                    self._empty(jobs, np.float64))
        self._launch("chi2_scan.cascade", mod, "pruned_scan", *data, pj, scales, np.int32(m),
                     np.int32(n), *windows, *tables, w_uniform, g, pad, prune_min, fine_min,
                     threshold, np.int32(self.debug), *job_outs, counters,
                     block=(block, 1, 1), grid=(jobs, 1))
        self._launch("chi2_scan.reduce", mod, "reduce_jobs", *job_outs,
                     self._put(np.arange(b + 1) * slots, np.int32), np.int32(b), *outs,
                     block=(128, 1, 1), grid=(-(-b // 128), 1))

    def _launch(self, stage, module, kernel, *args, **launch):
        """Launch ``kernel`` and wait for it, its time under ``timings[stage]``
        (the scan's parts: prefix sums, seeds, cascade, reduction; dotted
        names are parts of a stage, not added to the total again)."""
        import pycuda.driver as cuda

        with self.clock(stage):
            module.get_function(kernel)(*args, **launch)
            cuda.Context.synchronize()
