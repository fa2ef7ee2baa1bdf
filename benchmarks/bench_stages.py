"""Per-stage timings: the shared host stages (grids, template cache) per case,
and each backend's device stages (upload, fold + sort, chi2 scan) and their
composition ``backend.search`` over all trial periods, warm (compiled and
allocated before the first sample). Every timed call ends with
``backend.synchronize()``.
"""

from __future__ import annotations

import os
import time

import backends
from benchmarks.cases import NDATA, NPERIODS, case, runnable_backend

BACKENDS = [name for name in backends.backend_names() if name != "reference"]
FOLD_MEMORY = 4e9  # bytes of folded light curves the chi2-scan benchmark may hold


class Timing:
    """asv settings shared by the timed benchmarks: every sample is one call;
    3 to 5 samples, fewer than 5 once 2 s are spent (asv reports their median).
    ``TLS_BENCH_TIMER=process`` (CI's gate, host work on one thread) times the
    CPU time of the benchmark's process instead of the wall clock: other
    processes on the machine hardly change it (a device's time is not in it).

    asv runs ``setup`` again before every sample; the case, the backend and
    its warm-up are prepared once per process (``prepare``), as a user's
    repeated searches would find them."""

    number = 1
    repeat = (3, 5, 2.0)
    rounds = 1
    warmup_time = 0.0
    timeout = 300
    timer = time.process_time if os.environ.get("TLS_BENCH_TIMER") == "process" else time.perf_counter

    def setup(self, *params):
        if getattr(self, "_prepared", None) != params:
            self.prepare(*params)
            self._prepared = params


class HostStages(Timing):
    """Stages 1-3, the same for every backend, and the whole host plan
    (``backends.make_plan``: TLS's checks, grids and templates). Host work
    only: asv calls each several times per sample (``number`` calibrated)."""

    params = (NDATA, NPERIODS)
    param_names = ["ndata", "nperiods"]
    number = 0
    repeat = (5, 10, 2.0)

    def prepare(self, ndata, nperiods):
        self.case = case(ndata, nperiods)
        self.span = float(self.case.t.max() - self.case.t.min())
        self.durations = backends.TLSBackend.duration_grid(self.case.periods)

    def time_grids(self, ndata, nperiods):
        periods = backends.TLSBackend.period_grid(
            self.span, oversampling_factor=self.case.options["oversampling_factor"])
        backends.TLSBackend.duration_grid(periods)
        self.case.plan.width_windows(periods)

    def time_template_cache(self, ndata, nperiods):
        backends.TLSBackend.template_cache(self.durations, ndata)

    def time_plan(self, ndata, nperiods):
        backends.make_plan(self.case.t, self.case.y, self.case.dy, **self.case.options)


class _BackendCase(Timing):
    params = (BACKENDS, NDATA, NPERIODS)
    param_names = ["backend", "ndata", "nperiods"]

    def prepare(self, name, ndata, nperiods):
        self.case = case(ndata, nperiods)
        self.plan, self.periods = self.case.plan, self.case.periods
        self.backend = runnable_backend(name, ndata, nperiods)
        self.lo, self.hi = self.plan.width_windows(self.periods)
        step = max(1, int(self.backend.max_batch_periods(self.plan)))
        self.batches = [slice(k, k + step) for k in range(0, self.periods.size, step)]
        self.state = self.backend.upload(self.plan)
        self.backend.synchronize()

    def compile(self):
        self.backend.search(self.plan, self.periods[self.batches[0]][:64])  # compile, allocate
        self.backend.synchronize()


class Upload(_BackendCase):
    """Host to device copies of a plan (no kernel needed: nothing compiled); the
    PyCUDA backends keep the templates of the last one on the device, as a
    search of the same plan or template cache finds them."""

    def time_upload(self, name, ndata, nperiods):
        self.backend.upload(self.plan)
        self.backend.synchronize()


class FoldSort(_BackendCase):
    def prepare(self, name, ndata, nperiods):
        super().prepare(name, ndata, nperiods)
        self.compile()
        # NotImplementedError here (asv: skipped) where the stage runs only inside the scan
        self.backend.fold_sort(self.state, self.periods[self.batches[0]][:64])

    def time_fold_sort(self, name, ndata, nperiods):
        for batch in self.batches:
            self.backend.fold_sort(self.state, self.periods[batch])
        self.backend.synchronize()


class Chi2Scan(_BackendCase):
    """The scan alone on folds made beforehand (for a backend that fuses
    fold + sort into its scan, the scan stage as it runs inside ``search``)."""

    def prepare(self, name, ndata, nperiods):
        super().prepare(name, ndata, nperiods)
        fused = self.backend.folds_in_scan(self.plan)
        if not fused and 16.0 * ndata * nperiods > FOLD_MEMORY:
            raise NotImplementedError("folds of every period would not fit in memory")
        self.compile()
        self.folded = [None if fused else self.backend.fold_sort(self.state, self.periods[b])
                       for b in self.batches]
        self.backend.synchronize()

    def time_chi2_scan(self, name, ndata, nperiods):
        for batch, folded in zip(self.batches, self.folded):
            self.backend.chi2_scan(self.state, folded, self.periods[batch], self.lo[batch],
                                   self.hi[batch])
        self.backend.synchronize()


class Search(_BackendCase):
    """Stages 4-6 composed, as ``backend.search`` runs them."""

    def prepare(self, name, ndata, nperiods):
        super().prepare(name, ndata, nperiods)
        self.compile()

    def time_search(self, name, ndata, nperiods):
        self.backend.search(self.plan, self.periods)
        self.backend.synchronize()

