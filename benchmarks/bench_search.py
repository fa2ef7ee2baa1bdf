"""End-to-end searches through ``backends.search`` (the plan's grids and
templates, the backend's scan, TLS's statistics and T0 fit), warm and
cold; accuracy against the ``cpu`` backend; peak GPU memory.

The results of ``backends.search`` are host arrays, so each timed call has
waited for the device by the time it returns.
"""

from __future__ import annotations

import itertools

import backends
from benchmarks import REPO
from benchmarks.bench_stages import BACKENDS, Timing
from benchmarks.cases import (NDATA, NPERIODS, case, light_curve, outcome, reported,
                              require_budget, runnable_backend, tls_options)


def search(name, ndata, nperiods):
    c = case(ndata, nperiods)
    return backends.search(c.t, c.y, c.dy, backend=name, **c.options)


class EndToEnd(Timing):
    params = (BACKENDS, NDATA, NPERIODS)
    param_names = ["backend", "ndata", "nperiods"]

    def prepare(self, name, ndata, nperiods):
        runnable_backend(name, ndata, nperiods)
        search(name, ndata, nperiods)  # warm-up: context, compilation, JIT

    def time_search_warm(self, name, ndata, nperiods):
        search(name, ndata, nperiods)


class Batch(Timing):
    """``search_batch`` of BATCH light curves of the smallest case's size
    (seeds 0 to BATCH - 1) against the same searches one ``backends.search``
    at a time: the difference is what the batch path costs or saves."""

    params = (BACKENDS,)
    param_names = ["backend"]
    BATCH = 4

    def prepare(self, name):
        runnable_backend(name, NDATA[0], NPERIODS[0])
        self.curves = [light_curve(NDATA[0], seed) for seed in range(self.BATCH)]
        self.options = tls_options(self.curves[0].t, NPERIODS[0])
        self.time_search_batch(name)  # warm-up: context, compilation, JIT, thread pool
        self.time_search_each(name)

    def time_search_batch(self, name):
        backends.search_batch([(lc.t, lc.y, lc.dy) for lc in self.curves], backend=name, **self.options)

    def time_search_each(self, name):
        for lc in self.curves:
            backends.search(lc.t, lc.y, lc.dy, backend=name, **self.options)


class ColdStart(Timing):
    params = (BACKENDS, NDATA, NPERIODS)
    param_names = ["backend", "ndata", "nperiods"]

    def prepare(self, name, ndata, nperiods):
        runnable_backend(name, ndata, nperiods)

    def timeraw_search_cold(self, name, ndata, nperiods):
        """First search in a fresh interpreter: GPU context, kernel compilation
        (an empty on-disk kernel cache), JIT (imports and the light curve are
        set up untimed)."""
        setup = (f"import os, sys, tempfile; sys.path.insert(0, {REPO!r}); "
                 "os.environ['TLS_KERNEL_CACHE_DIR'] = tempfile.mkdtemp(); "
                 f"from benchmarks.bench_search import search, case; case({ndata}, {nperiods})")
        return f"search({name!r}, {ndata}, {nperiods})", setup


class Accuracy:
    """Statistics of a backend against the exact ``cpu`` backend on the same
    search (lower is better). Every search runs once, in ``setup_cache`` (one
    process: each backend compiles once); the tracks read the differences."""

    params = ([name for name in BACKENDS if name != "cpu"], NDATA, NPERIODS)
    param_names = ["backend", "ndata", "nperiods"]
    timeout = 600

    def setup_cache(self):
        """{(backend, ndata, nperiods): (max |dSR|, relative SDE error) or the
        exception that keeps the backend from running that case}."""
        import numpy as np

        def cpu(ndata, nperiods):
            require_budget("cpu", ndata, nperiods)
            return search("cpu", ndata, nperiods)

        def differences(name, ndata, nperiods, reference):
            reference = reported(reference)
            runnable_backend(name, ndata, nperiods)
            result = search(name, ndata, nperiods)
            return (float(np.max(np.abs(np.asarray(result.SR) - np.asarray(reference.SR)))),
                    abs(result.SDE - reference.SDE) / abs(reference.SDE))

        out = {}
        for ndata, nperiods in itertools.product(*self.params[1:]):
            reference = outcome(lambda: cpu(ndata, nperiods))
            out.update({(name, ndata, nperiods): outcome(
                lambda: differences(name, ndata, nperiods, reference)) for name in self.params[0]})
        return out

    def setup(self, differences, name, ndata, nperiods):
        self.differences = reported(differences[(name, ndata, nperiods)])

    def track_max_abs_delta_sr(self, differences, name, ndata, nperiods):
        return self.differences[0]

    track_max_abs_delta_sr.unit = "SR"

    def track_sde_relative_error(self, differences, name, ndata, nperiods):
        return self.differences[1]

    track_sde_relative_error.unit = "fraction"


class GPUMemory:
    """Peak GPU memory of one search in a fresh process (context included)."""

    params = (BACKENDS, NDATA, NPERIODS)
    param_names = ["backend", "ndata", "nperiods"]
    timeout = 600

    def setup(self, name, ndata, nperiods):
        if runnable_backend(name, ndata, nperiods).device != "gpu":
            raise NotImplementedError(f"{name} does not run on a GPU")
        case(ndata, nperiods)

    def track_gpu_memory(self, name, ndata, nperiods):
        from benchmarks.gpu_memory import peak_memory

        return peak_memory(lambda: search(name, ndata, nperiods))

    track_gpu_memory.unit = "bytes"
