"""``simple``: one fused PyCUDA kernel per (light curve, period) in shared
memory (``backends/cuda/simple.cu``: fold, sort and the float32 polyphase
scan, approximate, see ``pycuda_base``) for small light curves, many light
curves per launch on CUDA streams. It refuses, before any launch, a light
curve its shared memory cannot hold."""

from __future__ import annotations

import functools
from collections import defaultdict

import numpy as np

from backends import packing
from backends.implementations.pycuda_base import (
    LAUNCH_MACS, MEMORY_BUDGET, PyCUDABackend, phase_capacity, phase_templates, skewed, width_macs)
from backends.protocol import InputTooLarge, PeriodStats, trial_periods


def simple_shared_bytes(n: int, maxwidth: int, strides) -> int:
    """Dynamic shared memory of ``simple_search``: skewed float64 cumulative
    flux, two float32 polyphase copies (which first hold the sort keys), the
    int order."""
    m = n + maxwidth
    return 8 * (skewed(m) + 1) + 8 * phase_capacity(m, strides) + 4 * n


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

    def search_many(self, jobs, progress=None, found=None):
        """Every (plan, periods) job in packed launches (at most LAUNCH_MACS
        multiply-adds and MEMORY_BUDGET bytes each, one block size per launch),
        the host packing the next launch while the device runs this one.
        Raises ``InputTooLarge`` before any launch if a light curve does not
        fit. ``progress`` gets the number of periods of each finished launch;
        ``found(k, stats)`` job k's statistics once its last launch is back."""
        jobs = [(plan, trial_periods(periods)) for plan, periods in jobs]
        for k, (plan, _) in enumerate(jobs):
            why = self.refuses(plan)
            if why is not None:
                raise InputTooLarge(why if len(jobs) == 1 else f"light curve {k}: {why}")
        with self.clock("duration_grid"):
            windows = [plan.width_windows(periods) for plan, periods in jobs]
        with self.clock("pack"):
            packed = [packing.Job(packed_curve(plan), periods, lo, hi)
                      for (plan, periods), (lo, hi) in zip(jobs, windows)]
        stats = [None] * len(jobs)

        def done(k, result):
            with self.clock("results"):
                stats[k] = self._stats(jobs[k][0], result)
            if found is not None:
                found(k, stats[k])

        self._run(packed, progress, done)
        return stats

    def _stats(self, plan, result):
        return PeriodStats.from_gains(plan, result["gain"], result["index"], result["depth"])

    def _run(self, jobs, progress=None, done=None):
        """Per job, its (gain, depth, index) arrays, from packed launches;
        ``done(k, arrays)`` as soon as job k's are complete."""
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
                                    functools.partial(self._finish, pack, into=into, progress=progress,
                                                      done=done, members=members))
                pipe.drain()
            except BaseException:
                pipe.abandon()
                raise
        return results

    def _launch(self, block, pack, dev_in, dev_out, stream):
        fn = self.function("simple_search", block, pack.shared)
        args = [np.uintp(dev_in + pack.offsets[name]) for name in packing.INPUTS]
        args += [np.uintp(dev_out + pack.out_offsets[name]) for name in ("gain", "index", "depth")]
        fn(*args, block=(block, 1, 1), grid=(pack.blocks, 1), shared=pack.shared, stream=stream)

    def _finish(self, pack, host_out, into, progress, done, members):
        """A retired pack: its results into ``into`` (its block size's jobs,
        ``members``: their places in the search), ``done`` for each job it completes."""
        with self.clock("results"):
            periods = pack.scatter(host_out, into)
        if progress is not None:
            progress(periods)
        if done is not None:
            for job in pack.completes:
                done(members[job], into[job])
