"""``pruned``: TLS's exact statistic on the GPU with the certified pruning
cascade of ``backends.pruning`` (the one the ``cpu`` backend runs): per period
a threshold from the exact gain at each width's deepest box, then per shift the
depth filter and a one-piece bound, a K-piece bound on the survivors (linear
pieces as ``cpu``'s; constant ones where a fold in shared memory leaves no room
for their prefix sums, or its weights differ) and the exact float64 dot
products on what is left, typically 0.3-5 % of brute force's multiply-adds
(``results.meta["work"]``). In the shared layout with uniform weights a row
gate first bounds rows of 32 shifts at once and skips those that cannot hold
a shift the scan would queue (K2-like: 37 % of the deep shifts); the work
counters are the same with it.

Two layouts (``pruned.cu``): a light curve whose fold and prefix sums fit in
shared memory (K2-size) is searched by one kernel, one block per period, with
every per-period array in shared memory; a longer one (TESS sectors,
100,000-point curves) by four kernels over arrays in global memory, allocated
from a memory pool, device memory bounded by batching periods; the scan's blocks
take up to ``scan_jobs`` widths of one period and one stride (``width_groups``),
their shifts interleaved, so a period's prefix sums come from L2 once for all
of them (TESS-like cascade -7 %, Nsight Compute: it was L2-bound). Both run the
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
from backends.bounded_cache import BoundedCache
from backends.implementations.device_pool import PooledScratch
from backends.implementations.event_clock import EventClock, mark
from backends.implementations.pycuda_base import OUTS, PyCUDABackend
from backends.implementations.staged import PINNED, Staged
from backends.protocol import PeriodStats

CHUNK_PER_THREAD = 8  # queue places per thread (pruned.cu's CHUNK)
# pruned_period's survivor list (SHARED_BLOCK threads; the one-piece bound's survivors wait in each warp's ring):
# with pruned.cu's SURVIVOR_ROOM (2,560) kept free, 512 places for a K2-like period's ~205 survivors on
# average (256: 1.30 flushes per period, K2-like kernel +0.6 %, NOTES.md step 87); a K2-like fold (4,838
# samples) with the linear bound's pj fits beside it (tests/test_cuda_sources.py)
PERIOD_CHUNK = 3072
# Periods per batch: bounds a launch's length (progress, Ctrl-C). K2-like's 9,679 in one launch, not three:
# kernel 10.6 -> 10.4 ms on the H100 (two fewer partly filled last waves of one block per SM).
MAX_PERIODS = 16384
FOLD_BLOCK, FOLD_BLOCK_MIN_N = 1024, 8192  # light curves this long fold with 1,024 threads
FOLD_BUCKETS = 24576  # pruned_fold's bucket counts in shared memory (96 KB: two blocks per SM)
FOLD_ORDER_BYTES = 110 << 10  # pruned_fold's order and counts in shared memory up to this (two blocks per SM)
# device memory a batch may take (and at most half the free memory): 78-day 89 -> 81.5 ms from 4 GiB (16: 78 ms)
BATCH_BYTES = 8 << 30
SCAN_JOBS = 8  # widths per pruned_scan block at most (pruned.cu's SCAN_JOBS, set from here)
SEED_BLOCK = 1024  # threads of pruned_seed (a warp per width: TLS's grids allow ~32 per period)
SEED_CS_BYTES = 227 << 10  # pruned_seed's copy of the cumulative flux up to this (and the device's limit)
SHARED_BLOCK = 512  # threads of pruned_period (128 registers each, no spills; 1,024 spill)
LAYOUTS = ("auto", "shared", "global")
FINE_BOUNDS = ("auto", "constant")  # pruned_period's K-piece bound: linear where it can be (period_line), or constant
# Template lengths below which the bounds (prune_min) or the K-piece bound
# (fine_min) are skipped, per layout, measured on the H100: bounds on every
# template cost least with the fold in shared memory (K2-like 20.9 -> 17.2 ms,
# reports/gpu/pruned_flush_2026-11-23_H100/sweep_e89d913.*); in global memory
# 8 against 32 took K2-like with errors that differ from 18.1 to 14.1 ms, TESS-like
# and 78-day the same (reports/gpu/pruned_rings_2026-11-27k_H100/, calls 6-7).
# pruned.cu's TABLE_PARAMS, in order: template_sections' arrays
TABLE_NAMES = ("widths", "strides", "offsets", "a", "kscale", "sum_a2", "overshoot", "n_pieces", "bounds",
               "inv_n", "c", "c2", "rho_q", "rho2", "mean", "amax", "sum_c", "s_max", "line_bounds",
               "line_c", "line_slope", "line_centre", "line_rho_q", "line_terms")
NULL = np.intp(0)  # a null device pointer as a PyCUDA kernel argument
STAGE_MIN = {"shared": (1, pruning.FINE_MIN_LENGTH), "global": (8, pruning.FINE_MIN_LENGTH)}


def fold_buckets(n):
    """(buckets, order in shared memory) of pruned_fold for ``n`` samples: the
    order sorts in shared memory beside at least n / 4 bucket counts where
    both fit in FOLD_ORDER_BYTES, else in global memory beside up to
    FOLD_BUCKETS counts."""
    beside = min(n, FOLD_BUCKETS, FOLD_ORDER_BYTES // 4 - n)
    if 4 * beside >= n:
        return beside, True
    return min(n, FOLD_BUCKETS), False


def width_groups(strides, per_block):
    """pruned_scan's groups of widths: runs of consecutive widths of one
    stride, cut into at most ``per_block`` each. (group_of: each width's
    group, then the group count for the width past the last; group_start: each
    group's first width, then the width count), int32."""
    strides = np.asarray(strides)
    starts = np.r_[0, np.flatnonzero(np.diff(strides)) + 1]  # each run's first width
    run_start = np.repeat(starts, np.diff(np.r_[starts, strides.size]))  # each width's
    new = (np.arange(strides.size) - run_start) % per_block == 0  # a group starts here
    group_of = np.cumsum(new) - 1
    group_start = np.flatnonzero(new)
    return (np.append(group_of, group_start.size).astype(np.int32),
            np.append(group_start, strides.size).astype(np.int32))


GROUPS = BoundedCache(maxsize=16)  # width_groups per (strides, widths per block): ~0.14 ms per search on the H100 hosts


def cached_groups(strides, per_block):
    """``width_groups``, kept for the next search with the same strides."""
    strides = np.asarray(strides, np.int64)
    return GROUPS.get((strides.tobytes(), per_block), lambda: width_groups(strides, per_block))


@dataclass
class PrunedState:
    """The plan on the device (``DeviceState``; its tables hold the pruning
    tables too) and the layout: ``shared`` (pruned_period) or global memory."""

    base: object
    shared: bool


PER_PERIOD = ("periods", "lo", "hi", "threshold", "gain", "index", "depth")  # ScanArrays' per-period arrays
RESULTS = ("counters", *OUTS)  # what a search reads back (adjacent in ScanArrays: one copy)


@dataclass
class ScanArrays:
    """One search's arrays on the device, in one ``Staged`` allocation from
    the pool: per period (``PER_PERIOD``: periods, width windows, thresholds,
    ``OUTS``), the offsets ``starts`` of each period's pruned_scan blocks
    (``groups`` per period, of the ``width_groups`` in the template tables)
    and the work ``counters``;
    plus the cascade's constants (least weight, g, pad, prune_min, fine_min).
    ``view`` is a batch's part: ``arg(name)`` then points at the batch's
    first period."""

    staged: object
    size: int
    cascade: tuple
    groups: int = 1
    first: int = 0

    def view(self, start, stop) -> "ScanArrays":
        return replace(self, first=self.first + start, size=stop - start)

    def arg(self, name):
        """Device address of ``name`` for this batch (a kernel argument)."""
        return self.staged.pointer(name, self.first if name in PER_PERIOD else 0)

    def args(self, *names) -> tuple:
        return tuple(self.arg(name) for name in names)


class PrunedBackend(PooledScratch, PyCUDABackend):
    """Exact pruned scan: seed, one-piece bound, K-piece bound, exact survivors."""

    name = "pruned"
    summary = "exact, PyCUDA: certified pruning cascade (bounds, then exact float64 survivors); any n"
    variant = "pruned"
    defines: dict = {}
    shared_block = SHARED_BLOCK  # pruned_period's threads (scripts/pruned_variants.py times others)

    def __init__(self, block_size: int | None = None, debug: bool = False, layout: str = "auto",
                 prune_min: int | None = None, fine_min: int | None = None, scan_jobs: int = SCAN_JOBS,
                 fine_bound: str = "auto"):
        """``layout``: "shared" (one kernel, fold in shared memory), "global"
        (any n) or "auto" (shared where the fold fits). Templates shorter than
        ``prune_min`` samples skip the bounds, shorter than ``fine_min`` the
        K-piece bound (``pruning.tuning``: exact either way; default: the
        layout's, ``STAGE_MIN``). ``scan_jobs``: widths of a period per block
        of the global layout's scan, their shifts interleaved (1 to SCAN_JOBS).
        ``fine_bound``: the shared layout's K-piece bound, "auto" (linear, as
        the global layout's, for uniform weights where its fifth prefix array
        fits in shared memory; else constant) or "constant" (exact either way)."""
        super().__init__(block_size)
        if layout not in LAYOUTS:
            raise ValueError(f"layout must be one of {LAYOUTS}, not {layout!r}")
        if fine_bound not in FINE_BOUNDS:
            raise ValueError(f"fine_bound must be one of {FINE_BOUNDS}, not {fine_bound!r}")
        if any(v is not None and v < 1 for v in (prune_min, fine_min)):
            raise ValueError(f"prune_min and fine_min must be at least 1, not {prune_min}, {fine_min}")
        if not 1 <= scan_jobs <= SCAN_JOBS:
            raise ValueError(f"scan_jobs must be 1 to {SCAN_JOBS}, not {scan_jobs}")
        self.scan_jobs = int(scan_jobs)
        self.debug = bool(debug)
        self.layout = layout
        self.fine_bound = fine_bound
        self.stage_min = (prune_min, fine_min)
        self._batch = None  # (scratch bytes per period, periods per batch) while the pool holds that batch

    def _pool_for(self, plan) -> bool:
        """``PooledScratch``'s, forgetting the batch the pool held when it lets it go."""
        freed = super()._pool_for(plan)
        if freed:
            self._batch = None
        return freed

    def upload(self, plan):
        return PrunedState(super().upload(plan), self.folds_in_scan(plan))

    def template_sources(self, tp):
        """The templates and their pruning tables (a test may swap the tables)."""
        return (tp, tp.pieces)

    def template_sections(self, tp):
        """The templates, then the pruning tables of every width (once per
        templates object: a table of another count of linear pieces than the
        kernels unroll, LINE_PIECES, would read a neighbouring width's)."""
        pc = tp.pieces
        if pc.k_lines != pruning.LINE_PIECES:
            raise ValueError(f"pruned's kernels take {pruning.LINE_PIECES} linear pieces, not {pc.k_lines}")
        f64, i32 = np.float64, np.int32
        tables = dict(
            kscale=(tp.kscale, f64), sum_a2=(pc.sum_a2, f64),
            n_pieces=(pc.n_pieces, i32), bounds=(pc.bounds, i32), inv_n=(pc.inv_n, f64), c=(pc.c, f64),
            c2=(pc.c2, f64), rho2=(pc.rho2, f64), mean=(pc.mean, f64),
            rho_q=(pruning.rho_q(pc.rho, np.array([pruning.COARSE_PAD, pruning.PAD])), f64),  # one piece, K pieces
            amax=(pc.amax, f64), sum_c=(pc.sum_c, f64),
            s_max=(pruning.depth_limits(tp.widths, tp.depth_min), f64),
            line_bounds=(pc.line_bounds, i32), line_c=(pc.line_c, f64),
            line_slope=(pc.line_slope, f64), line_centre=(pc.line_centre, f64),
            line_rho_q=(pruning.rho_q(pc.line_rho, pruning.PAD), f64),
            line_terms=(np.column_stack([np.abs(pc.line_c).sum(axis=1), np.abs(pc.line_slope).sum(axis=1),
                                         pc.line_defects]), f64),
        )
        group_of, group_start = cached_groups(tp.strides, self.scan_jobs)
        return [*super().template_sections(tp),
                *((name, np.ascontiguousarray(v, dtype)) for name, (v, dtype) in tables.items()),
                ("group_of", group_of), ("group_start", group_start)]

    @staticmethod
    def shared_doubles(plan, line: bool = False) -> int:
        """pruned_period's dynamic shared memory in doubles: rw, cs, pu, pu2,
        then with uniform weights and ``line`` pj, with weights that differ w
        (M samples, prefix sums M + 1; its bounds take A2's least, no prefix
        sums of w)."""
        m = plan.lc.size + plan.templates.maxwidth
        return 4 * m + 3 + (line * (m + 1) if plan.lc.uniform_weight else m)

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

    def search_block(self, plan) -> int:
        """Threads a block of the module whose kernels search ``plan``."""
        return self.shared_block if self.folds_in_scan(plan) else self._block(plan.lc.size)

    def _fits(self, plan) -> bool:
        return 8 * self.shared_doubles(plan) <= self._period_shared(plan)

    def period_line(self, plan) -> bool:
        """Whether pruned_period searches ``plan`` with the linear K-piece
        bound (``fine_bound``): uniform weights, its prefix sums pj in shared
        memory beside the fold."""
        return (self.fine_bound == "auto" and plan.lc.uniform_weight > 0 and self.folds_in_scan(plan)
                and 8 * self.shared_doubles(plan, True) <= self._period_shared(plan))

    def _period_shared(self, plan) -> int:
        """The dynamic shared memory pruned_period may take for ``plan``'s fold:
        the opt-in limit less the kernel's static memory; the opt-in limit
        alone where the fold exceeds it (nothing compiled for such a fold)."""
        limit = self.optin_shared()
        if 8 * self.shared_doubles(plan) > limit:
            return limit
        return self.shared_limit("pruned_period", self.shared_block)

    def fold_sort(self, state, periods):
        """Per period (rows of b x n): the sample indices in (phase, index)
        order, as the cpu backend's stable sort gives them; the prefix sums
        gather the patched fold's flux and weights through it."""
        with self.context():
            staged = Staged([("periods", np.asarray(periods, np.float64))], self._allocate)
            return self._fold(state, staged.pointer("periods"), len(periods))

    def _fold(self, state, periods, b):
        """pruned_fold of the ``b`` periods at device address ``periods``,
        queued; its order (``Staged``, pooled: the scratch goes back to the
        pool when its last reference goes, to be reused by later launches in
        stream order)."""
        base = state.base
        n = base.n
        scratch = Staged([("keys", (np.float64, b * n)), ("order", (np.int32, b * n))], self._allocate)
        block = FOLD_BLOCK if n >= FOLD_BLOCK_MIN_N else base.block
        buckets, order_shared = fold_buckets(n)
        shared = 4 * (buckets + n * order_shared)
        self.function("pruned_fold_shared" if order_shared else "pruned_fold", block, shared)(
            base.t, np.int32(n), np.int32(buckets), periods, *scratch.pointers("keys", "order"),
            block=(block, 1, 1), grid=(b, 1), shared=shared)
        return scratch

    def scratch_bytes(self, plan):
        """Device bytes per period: sort keys and order (12 n), u and folded
        weights (2 x 8 M), cumulative flux and five prefix sums (6 x 8 (M + 1))."""
        n, m = plan.lc.size, plan.lc.size + plan.templates.maxwidth
        return 12 * n + 16 * m + 48 * (m + 1)

    def max_batch_periods(self, plan):
        """Periods per batch: at most BATCH_BYTES of scratch and half the free
        memory, asked once per scratch size: the pool then holds a batch's
        scratch, which later searches of that size reuse (asked again, the
        free memory would no longer count it)."""
        import pycuda.driver as cuda

        if self.folds_in_scan(plan):
            return MAX_PERIODS
        per_period = self.scratch_bytes(plan)
        if self._batch is None or self._batch[0] != per_period:
            with self.context():
                free, _ = cuda.mem_get_info()
            self._batch = (per_period, int(np.clip(min(BATCH_BYTES, free // 2) // per_period, 1, MAX_PERIODS)))
        return self._batch[1]

    @staticmethod
    def chunk(block) -> int:
        """Places in each of the scan's shared queues (pruned.cu's CHUNK:
        pruned_scan's queue and survivor list, pruned_period's survivor
        list): PERIOD_CHUNK in pruned_period's module; modules past
        SHARED_BLOCK threads (the fold-only module of FOLD_BLOCK) take 2,048 and
        compile no pruned_period (kernel_defines): its warps' rings would leave
        no room for the survivors within 48 KiB of static shared memory, and
        those modules never launch one."""
        if block == SHARED_BLOCK:
            return PERIOD_CHUNK
        return CHUNK_PER_THREAD * (block if block <= SHARED_BLOCK else 256)

    def kernel_defines(self, block):
        return {"CHUNK": self.chunk(block), "SCAN_JOBS": SCAN_JOBS, "SEED_BLOCK": SEED_BLOCK,
                "LINE_PIECES": pruning.LINE_PIECES, "PERIOD_KERNEL": int(block <= SHARED_BLOCK),
                "COARSE_DEPTH": pruning.COARSE_DEPTH, "COARSE_PAD": pruning.COARSE_PAD}

    @staticmethod
    def _table_args(state) -> tuple:
        """pruned.cu's TABLE_PARAMS: template and piece tables of every width."""
        pieces = state.base.plan.templates.pieces
        return (*state.base.tables.pointers(*TABLE_NAMES), np.int32(pieces.k_max), np.int32(pieces.k_lines))

    def search_batches(self, state, plan, periods, lo, hi, progress=None):
        """The protocol's batches, queued: the host launches batch k + 1 while
        the device runs batch k (at most two in flight, so Ctrl-C waits for
        little), stage times from CUDA events, results read once at the end.
        A batch's scratch goes back to the pool once its launches are queued
        and is reused by the next batch in stream order. Each batch's host
        work (uploads, argument packing, reads: ~1-2 ms) no longer idles the device."""
        # events are best freed in the context (elsewhere PyCUDA leaks them): a frame of their own; the
        # results' page-locked buffer is this search's until they are copied out of it
        with self.context(), PINNED.lend() as pinned:
            return self._search_queued(state, plan, periods, lo, hi, progress, pinned)

    def _search_queued(self, state, plan, periods, lo, hi, progress, pinned):
        step = max(1, int(self.max_batch_periods(plan)))
        clock = EventClock(self.timings)
        staged = self._staged_periods(state, periods)
        # the first fold goes first; the host writes the rest while it runs
        folded = self._queue_fold(state, staged.pointer("periods"), min(step, len(periods)), clock)
        arrays = self._scan_arrays(state, staged, lo, hi)
        in_flight = collections.deque()
        for start in range(0, arrays.size, step):  # at least one batch: search() refuses no periods
            batch = arrays.view(start, min(start + step, arrays.size))
            self._queue_batch(state, batch, clock, folded)
            folded = None
            if start + step >= arrays.size:  # the results' copy back, queued behind the last batch
                found = arrays.staged.read_queued(RESULTS, pinned)
            in_flight.append((mark(), batch.size))
            if start == 0:  # while the device runs the first batch
                known = pruning.host_work(plan, lo, hi)
            if len(in_flight) > 1:
                self._wait(*in_flight.popleft(), progress)
        while in_flight:
            self._wait(*in_flight.popleft(), progress)
        clock.settle()
        return self._results(plan, found(), known)

    @staticmethod
    def _wait(done, size, progress):
        done.synchronize()
        if progress is not None:
            progress(size)

    def _queue_fold(self, state, periods, b, clock):
        """The global layout's fold of the ``b`` periods at device address
        ``periods``, queued and timed; None in the shared layout, whose
        pruned_period folds in its scan."""
        if state.shared:
            return None
        with clock.stage("fold_sort"):
            return self._fold(state, periods, b)

    def _queue_batch(self, state, batch, clock, folded=None):
        """Queue ``batch``'s fold (unless ``folded`` holds it) and scan."""
        if folded is None:
            folded = self._queue_fold(state, batch.arg("periods"), batch.size, clock)
        with clock.stage("chi2_scan"):
            self._scan(state, folded, batch, clock)

    def chi2_scan(self, state, folded, periods, lo, hi):
        with self.context():
            return self._scan_now(state, folded, periods, lo, hi)

    def _scan_now(self, state, folded, periods, lo, hi):
        arrays = self._scan_arrays(state, self._staged_periods(state, periods), lo, hi)
        clock = EventClock(self.timings)
        self._scan(state, folded, arrays, clock)
        known = pruning.host_work(state.base.plan, lo, hi)  # while the device runs
        clock.settle()
        return self._results(state.base.plan, arrays.staged.read(RESULTS), known)

    def _staged_periods(self, state, periods) -> Staged:
        """The allocation of ``ScanArrays`` with the periods written, all a
        fold reads (``_scan_arrays`` writes the rest)."""
        b = len(periods)
        global_layout = not state.shared  # pruned_period reads no block offsets or thresholds
        return Staged([
            ("periods", np.asarray(periods, np.float64)), ("lo", (np.int32, b)), ("hi", (np.int32, b)),
            ("starts", (np.int32, b + 1 if global_layout else 0)),
            ("threshold", (np.uint64, b if global_layout else 0)),
            ("counters", (np.uint64, len(pruning.COUNTERS))),
            ("gain", (np.float64, b)), ("index", (np.int32, b)), ("depth", (np.float64, b)),
        ], self._allocate)

    def _scan_arrays(self, state, staged, lo, hi) -> ScanArrays:
        """``ScanArrays`` in ``staged`` (``_staged_periods``): the width windows,
        block offsets, zeroed thresholds and counters written in one
        asynchronous copy (it does not wait for a fold queued before it)."""
        layout = STAGE_MIN["shared" if state.shared else "global"]
        g, pad, prune_min, fine_min, _, _ = pruning.tuning(
            state.base.m, *(mine or default for mine, default in zip(self.stage_min, layout)))
        b = staged.sizes["periods"]
        groups = 1
        if not state.shared:
            group_of, _ = cached_groups(state.base.plan.templates.strides, self.scan_jobs)
            last = np.maximum(hi - 1, lo)  # an empty window's: lo (its blocks do nothing)
            groups = max(1, int(np.max(group_of[last] - group_of[lo] + 1, initial=1)))
        staged.write({"lo": lo, "hi": hi, "starts": np.arange(staged.sizes["starts"], dtype=np.int32) * groups,
                      "threshold": np.zeros(staged.sizes["threshold"], np.uint64),
                      "counters": np.zeros(len(pruning.COUNTERS), np.uint64)})
        cascade = (np.float64(state.base.plan.lc.least_weight), np.float64(g), np.float64(pad), np.int32(prune_min),
                   np.int32(fine_min))
        return ScanArrays(staged, b, cascade, groups)

    def _results(self, plan, found, known):
        """The search's work counters (the device's and ``known``,
        ``pruning.host_work``) and ``PeriodStats`` from ``found`` (RESULTS,
        copied back), owning their arrays."""
        pruning.add_work(self.work, found["counters"], known, self.debug)
        gain, index, depth = (found[name] for name in OUTS)
        return PeriodStats.from_gains(plan, gain, index, depth.copy())

    def _scan(self, state, folded, arrays, clock):
        if state.shared:
            self._scan_shared(state, arrays)
        else:
            self._scan_global(state, folded, arrays, clock)

    def _scan_shared(self, state, arrays):
        """pruned_period: one block per period, everything in shared memory."""
        base = state.base
        line = self.period_line(base.plan)
        shared = 8 * self.shared_doubles(base.plan, line)
        self.function("pruned_period", self.shared_block, shared)(
            base.t, base.y, base.w, np.int32(base.n), np.int32(base.m), *arrays.args("periods", "lo", "hi"),
            *self._table_args(state), np.float64(base.plan.lc.uniform_weight), *arrays.cascade,
            np.int32(self.debug), np.int32(line), *arrays.args(*OUTS, "counters"),
            block=(self.shared_block, 1, 1), grid=(arrays.size, 1), shared=shared)

    def _seed_shared(self, m, block) -> int:
        """pruned_seed's shared memory for folds of ``m`` samples (in the module
        for ``block``): its copy of the cumulative flux where it fits
        (SEED_CS_BYTES, the device), else 0 (it reads the flux from global memory)."""
        need = 8 * (m + 1)
        return need if need <= min(SEED_CS_BYTES, self.shared_limit("pruned_seed", block)) else 0

    def _scan_global(self, state, folded, arrays, clock):
        """Prefix sums, seeds (a block per period), the cascade (a block per
        ``width_groups`` group of a period), the periods' best fits."""
        base, block = state.base, state.base.block
        n, m, b = base.n, base.m, arrays.size
        w_uniform = np.float64(base.plan.lc.uniform_weight)
        tables = self._table_args(state)
        blocks = b * arrays.groups  # pruned_scan's
        uniform = w_uniform > 0.0  # the scan takes the one weight: no wf, pw, pw2
        folds = ["rw", "cs", "pu", "pu2", "pj"] + ([] if uniform else ["wf", "pw", "pw2"])
        scratch = Staged([*((name, (np.float64, b * m if name in ("rw", "wf") else b * (m + 1))) for name in folds),
                          ("scales", (np.float64, 4 * b)), ("job_gain", (np.float64, blocks)),
                          ("job_index", (np.int32, blocks)), ("job_depth", (np.float64, blocks))], self._allocate)

        def at(name):
            return scratch.pointer(name) if name in scratch.offsets else NULL

        rw, wf, pj, scales = at("rw"), at("wf"), at("pj"), at("scales")
        prefix = tuple(at(name) for name in ("cs", "pu", "pu2", "pw", "pw2"))
        job_outs = scratch.pointers("job_gain", "job_index", "job_depth")
        with clock.stage("chi2_scan.prefix"):
            self.function("pruned_prefix", block)(
                base.y, NULL if uniform else base.w, folded.pointer("order"), w_uniform, np.int32(n), np.int32(m),
                rw, wf, *prefix, pj, scales, block=(block, 1, 1), grid=(b, 1))
        data = (rw, wf, *prefix)
        with clock.stage("chi2_scan.seed"):
            seeds = self._seed_shared(m, block)
            self.function("pruned_seed", block, seeds)(
                rw, wf, prefix[0], np.int32(m), np.int32(n), *arrays.args("lo", "hi"), np.int32(seeds > 0), *tables,
                w_uniform, *arrays.args("threshold", "counters"), block=(SEED_BLOCK, 1, 1), grid=(b, 1), shared=seeds)
        with clock.stage("chi2_scan.cascade"):
            self.function("pruned_scan", block)(*data, pj, scales, np.int32(m), np.int32(n), *arrays.args("lo", "hi"),
                                                np.int32(arrays.groups),
                                                *base.tables.pointers("group_of", "group_start"),
                                                *tables, w_uniform, *arrays.cascade,
                                                arrays.arg("threshold"), np.int32(self.debug), *job_outs,
                                                arrays.arg("counters"), block=(block, 1, 1), grid=(blocks, 1))
        with clock.stage("chi2_scan.reduce"):
            self.function("reduce_jobs", block)(*job_outs, arrays.arg("starts"), np.int32(b), *arrays.args(*OUTS),
                                                block=(128, 1, 1), grid=(-(-b // 128), 1))
