"""``tensor``: TLS's exact statistic with a float16 tensor-core screen and
float64 re-checks (``backends/cuda/tensor_screen.cu``).

A block takes period after period, each the next of a queue's, until none
is left: no block is launched a period. It folds (``pruned``'s bucket
sort). With equal weights it bounds the gains of each job (a width's tiles
of 128 shifts) by ``mma.sync`` products of int8 copies of the fold and the
template, at half the k-steps, and each warp screens its job of the
largest bound first, skipping later jobs whose bound the lower gain has
passed. For the jobs screened it forms every listed shift's AR with
``mma.sync`` on float16 copies, and bounds each shift's gain by it with a
proven allowance (``backends.tensor_tables``, both products'); only shifts
whose upper gain reaches the
period's best lower gain are re-checked in float64, ~6 a K2-like period, so
the best (width, shift) and chi2 are the exact ones. A warp whose
list of kept shifts is full re-checks it at once, and their best exact gain
raises the period's lower gain: no list overflows.

With weights that differ, A2 = sum a^2 W comes from a second float16 product
(``tensor_search_w``), formed only for the jobs that the gate against A2's
floor w_min sum a^2 leaves open. For folds that fit in shared memory (K2-size);
``refuses`` says so for others (``pruned`` takes any). PyCUDA, as ``pruned``:
one nvcc cubin from the shared kernel cache with CUB and the bucket sort.
"""

from __future__ import annotations

import contextlib
import functools

import numpy as np

from backends import pruning
from backends.bounded_cache import BoundedCache
from backends.implementations.device_pool import PooledScratch
from backends.implementations.event_clock import EventClock, mark
from backends.implementations.pycuda_base import TEMPLATE_TABLES, PyCUDABackend
from backends.implementations.staged import PINNED, Staged
from backends.protocol import PeriodStats, trial_periods
from backends.tensor_tables import TILE, TensorTables, fold_shape, int8_scale, power_of_two_scale, shared_bytes

# (threads, tiles of 128 shifts a warp's job takes: they share each k-step's template fragment) per
# kernel, the fastest shapes timed on the H200 (NOTES steps 96, 97); tensor_search two blocks per SM
SHAPES = {"tensor_search": (384, 4), "tensor_search_w": (512, 4)}
KEPT = 1024  # shifts a block keeps for re-checks (CAP), KEPT // 12 a warp: at least a vote's 32
MIN_ARCH = (8, 0)  # mma.sync.m16n8k16 with float16 inputs and fp32 accumulation
MAX_WIDTHS = 64  # template widths a grid may hold (tensor_screen.cu's MAXW; TLS's grids: ~45)
MAX_PERIODS = 16384
SCRATCH_BYTES = 1 << 29  # the kept fold scratch grows beyond a batch's need up to this
SCRATCH_GROWTH = 1.25  # the kept fold scratch grows to this times a batch's need, so a survey's rising
# lengths re-allocate it a few times, not at every light curve
COUNTERS = ("tiles_screened", "kept", "rechecked", "exact_macs", "bound_violations", "flushes",
            "compactions", "jobs_refined")  # COUNT_*
WORK = (*COUNTERS, "shifts", "brute_force_macs")  # a search's work: the kernel's counters, then host_work's
OUTS = ("gain", "index", "depth")


class TensorBackend(PooledScratch, PyCUDABackend):
    """Exact scan: float16 tensor-core screen, float64 re-checks."""

    name = "tensor"
    summary = "exact, PyCUDA: float16 tensor-core screen, float64 re-checks; K2-size folds"
    variant = "tensor_screen"
    fuses_fold_sort = True  # each block folds its period
    shapes = SHAPES  # scripts/pruned_variants.py times others

    def __init__(self, debug: bool = False):
        """``debug``: every shift the screen skips or bounds gets its exact
        gain too (brute force's work), and a gain beyond the bound that
        skipped it raises ``pruning.BoundViolation``, as ``pruned``'s debug mode."""
        super().__init__()
        self.debug = bool(debug)
        self._folds = BoundedCache(TEMPLATE_TABLES)  # (templates, n, kernel) -> fold_of's
        self._scratch = (None, 0)  # (device memory, bytes) of a batch's fold scratch, kept across searches
        self._sm_threads = None  # (SMs, threads an SM) of the device, read once

    def kernel_defines(self, block):
        (uniform, tiles), (_, tiles_w) = self.shapes["tensor_search"], self.shapes["tensor_search_w"]
        return {"TPJ": tiles, "TPJ_W": tiles_w, "CAP": KEPT, "MIN_BLOCKS": 2 if block == uniform else 1,
                "DEBUG": int(self.debug)}

    def refuses(self, plan):
        why = super().refuses(plan)
        if why is not None:
            return why
        if plan.templates.widths.size > MAX_WIDTHS:
            return (f"backend 'tensor' takes at most {MAX_WIDTHS} template widths; this grid has "
                    f"{plan.templates.widths.size} (use 'pruned')")
        tp = plan.templates
        if tp.maxwidth > plan.lc.size or np.any(tp.lengths > tp.widths):
            return (f"backend 'tensor' reads folds patched once: no width wider than the light curve, no "
                    f"template longer than its width; this grid's widest is {tp.maxwidth} samples of "
                    f"{plan.lc.size}, its longest template {int(tp.lengths.max())} (use 'pruned')")
        with self.context():
            arch = self.identity()[1]
            if arch < MIN_ARCH:
                return (f"backend 'tensor' needs tensor cores of compute capability 8.0 or later; "
                        f"this GPU's is {arch[0]}.{arch[1]} (use 'pruned')")
            kernel, _, _, need, _ = self.fold_of(plan)
            limit = self.shared_limit(kernel, self.shapes[kernel][0])
        if need > limit:
            return (f"backend 'tensor' holds a fold of {plan.lc.size} points in {need} bytes of shared memory; "
                    f"this GPU allows {limit} (use 'pruned')")
        return None

    @staticmethod
    def kernel_for(plan) -> tuple:
        """(kernel, weighted): tensor_search for equal weights, tensor_search_w
        (A2 by a second product) for weights that differ."""
        weighted = not plan.lc.uniform_weight > 0
        return ("tensor_search_w" if weighted else "tensor_search"), weighted

    def search_block(self, plan) -> int:
        """Threads a block of the kernel that searches ``plan`` (its shape)."""
        return self.shapes[self.kernel_for(plan)[0]][0]

    def fold_of(self, plan) -> tuple:
        """(kernel, listed shifts per width, mp, shared bytes, each width's first
        job counted over the template grid: a period's widths' jobs are the
        differences) of ``plan``'s folds (``fold_shape``), formed once per
        templates object, size and kernel among the last TEMPLATE_TABLES
        (``device_templates``' rule)."""
        kernel = self.kernel_for(plan)[0]
        tp, n = plan.templates, plan.lc.size

        def formed():
            tiles = self.shapes[kernel][1]
            n_shifts, mp = fold_shape(tp, n, tiles)
            job_start = np.concatenate([[0], np.cumsum(-(-n_shifts // (TILE * tiles)))]).astype(np.int32)
            return kernel, n_shifts, mp, shared_bytes(tp, n, mp), job_start

        return self._folds.get_by_identity((tp,), formed, n, kernel)

    def template_sections(self, tp):
        """TLS's template arrays, then ``TensorTables``' (uploaded once per
        templates object, as every PyCUDA backend's)."""
        return [*super().template_sections(tp), *TensorTables(tp).sections()]

    def resident_blocks(self, threads) -> int:
        """Blocks of ``threads`` the device could hold at once, at most (its
        SMs' threads; registers and shared memory may allow fewer): each takes
        periods from the kernel's queue until none is left, so a block that
        waits for room starts when the queue is empty and ends at once."""
        import pycuda.driver as cuda

        if self._sm_threads is None:
            with self.context():
                dev, attr = self._device(), cuda.device_attribute
                self._sm_threads = (dev.get_attribute(attr.MULTIPROCESSOR_COUNT),
                                    dev.get_attribute(attr.MAX_THREADS_PER_MULTIPROCESSOR))
        sms, per_sm = self._sm_threads
        return sms * max(1, per_sm // threads)

    def scratch_memory(self, nbytes):
        """Device memory for a batch's fold scratch (``nbytes``: a block's
        folded flux, 8 n bytes, with weights that differ its weights too, 16 n),
        kept across searches and grown only (SCRATCH_GROWTH): from the pool, each
        K2-like light curve of a new length (~150 MB of orders when each period
        had its own) made it allocate and free again, its sizes past
        POOL_KEEP_BYTES. Held while the backend lives (at most SCRATCH_BYTES, or
        one batch's need beyond it; ``registry.release_instances`` lets kept
        instances go). Call in the context."""
        import pycuda.driver as cuda

        if self._scratch[1] < nbytes:
            if self._scratch[0] is not None:  # a queued search may still be using it
                cuda.Context.synchronize()
            self._scratch = (None, 0)  # the old memory goes before the new is taken
            size = max(nbytes, min(int(nbytes * SCRATCH_GROWTH), SCRATCH_BYTES))
            self._scratch = (cuda.mem_alloc(size), size)
        return np.intp(int(self._scratch[0]))

    def fold_sort(self, state, periods):
        raise NotImplementedError("backend 'tensor' folds each period inside its scan (fuses_fold_sort)")

    def max_batch_periods(self, plan):
        return MAX_PERIODS  # the fold scratch is a block's, whatever the batch

    def chi2_scan(self, state, folded, periods, lo, hi):
        # the results come back into a page-locked buffer, theirs until copied out of it (from_gains)
        with self.context(), PINNED.lend() as pinned:
            return self._queue(state, periods, lo, hi, pinned)()

    def search_many(self, jobs, progress=None, found=None):
        """``search`` of each job in turn, each queued on the device before the
        results of the one before it are read: the host's work on either side
        of a K2-like kernel (upload and launch ~0.3 ms, results ~0.1 ms) runs
        beside the kernel before it. A job of more than one batch is searched
        alone (``search``) in its turn."""
        jobs = [(plan, trial_periods(periods)) for plan, periods in jobs]  # checked before any work
        out, waiting = [], []  # the jobs queued: (k, periods searched, their stats' function, their buffer)

        def retire(k, size, stats, held):
            with held:
                out.append(stats())
            if progress is not None:
                progress(size)
            if found is not None:
                found(k, out[-1])

        with self.context():
            try:
                for k, (plan, periods) in enumerate(jobs):
                    if periods.size > self.max_batch_periods(plan):
                        queued = (k, periods.size, functools.partial(self.search, plan, periods),
                                  contextlib.nullcontext())
                    else:
                        self._pool_for(plan)
                        with self.clock("duration_grid"):
                            lo, hi = plan.width_windows(periods)
                        with self.clock("upload"):
                            state = self.upload(plan)
                        held = contextlib.ExitStack()
                        queued = (k, periods.size, self._queue(state, periods, lo, hi,
                                                               held.enter_context(PINNED.lend())), held)
                    waiting.append(queued)
                    if len(waiting) > 1:
                        retire(*waiting.pop(0))
                while waiting:
                    retire(*waiting.pop(0))
            except BaseException:
                import pycuda.driver as cuda

                cuda.Context.synchronize()  # no copy may land in a buffer lent again
                for *_, held in waiting:
                    held.close()
                raise
        return out

    def _queue(self, state, periods, lo, hi, pinned):
        """Queue tensor_search over ``periods`` and the copy of its results
        into ``pinned``'s memory (a ``PinnedBuffers.lend`` function); returns a
        function that waits for them and gives their ``PeriodStats``, the work
        counted (``pruning.host_work`` formed while the device runs). Call it
        and this in the context: the staged arrays go back to the pool in it."""
        periods, lo, hi = np.asarray(periods, np.float64), np.asarray(lo), np.asarray(hi)
        lc, tp, tables = state.plan.lc, state.plan.templates, state.tables
        b, n = periods.size, state.n
        kernel, n_shifts, mp, shared, job_start = self.fold_of(state.plan)
        threads = self.search_block(state.plan)
        weighted = self.kernel_for(state.plan)[1]
        grid = min(b, self.resident_blocks(threads))
        # what the host writes first (one copy), then what comes back (one span)
        sections = [("periods", periods), ("lo", lo.astype(np.int32)), ("hi", hi.astype(np.int32)),
                    ("n_shifts", n_shifts), ("job_start", job_start), ("queue", np.zeros(1, np.int32)),
                    ("counters", np.zeros(len(COUNTERS), np.uint64)),
                    ("gain", (np.float64, b)), ("index", (np.int32, b)), ("depth", (np.float64, b))]
        staged = Staged(sections, self._allocate)
        scratch = self.scratch_memory((16 if weighted else 8) * grid * state.m)  # before the clock: growing it waits
        u = (1.0 - lc.y) * lc.w  # its scales: float16's and the int8 fold's
        clock = EventClock(self.timings)
        with clock.stage("chi2_scan.kernel"):  # the device's time beside the stage's wall time
            self.function(kernel, threads, shared)(
                state.t, state.y, state.w, np.float64(lc.uniform_weight), np.float64(lc.w.min()),
                np.float64(lc.w.max()), np.int32(n), np.int32(state.m), np.int32(mp),
                np.float64(power_of_two_scale(u)), np.float64(power_of_two_scale(lc.w)), np.float64(int8_scale(u)),
                staged.pointer("periods"), np.int32(b), *staged.pointers("queue", "lo", "hi", "job_start"),
                *tables.pointers("widths", "strides"), staged.pointer("n_shifts"),
                *tables.pointers(*TensorTables.INT_FIELDS), *tables.pointers(*TensorTables.FLOAT_FIELDS),
                tables.pointer("overshoot"),
                *tables.pointers("f_off", "frag", "frag2", "f8_off", "frag8", "offsets", "a"), scratch,
                *staged.pointers(*OUTS), staged.pointer("counters"),
                block=(threads, 1, 1), grid=(grid, 1), shared=shared)
        found = staged.read_queued(["counters", *OUTS], pinned)  # page-locked: copied as the kernel ends
        copied = mark()
        known = pruning.host_work(state.plan, lo, hi)

        def stats():
            copied.synchronize()
            clock.settle()
            got = found()
            pruning.add_work(self.work, got["counters"], known, self.debug, names=COUNTERS)
            return PeriodStats.from_gains(state.plan, got["gain"], got["index"], got["depth"].copy())

        return stats
