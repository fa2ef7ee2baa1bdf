"""Issue 13's targets as asv ``track_*`` benchmarks (measured values, not
timings the gate compares):

- ``HostPath``: CPU milliseconds of host work per K2-like light curve of
  ``search_batch`` (the statistics replayed: ``benchmarks.host_path``), full
  TLS results and lean; the target is ``HOST_TARGET_S`` (2 ms), on any machine;
  beside them ``cpu_probe_us`` and ``python_probe_us``, the core's speed at the
  time in compiled and in interpreted code (cloud cores change speed by ~1.6x
  within seconds);
- ``Throughput``: K2-like light curves per second of a GPU backend's packed
  statistics (``search_many``) and of ``search_batch`` end to end (full and
  lean), and end to end over packed (target: 0.9 or more), one process.
"""

from __future__ import annotations

import time

import backends
from benchmarks.cases import runnable_backend
from benchmarks.host_path import Replay, cpu_probe_us, host_seconds, k2_like, plans_of, python_probe_us


class HostPath:
    params = ([False, True],)
    param_names = ["lean"]
    unit = "ms per light curve"
    timeout = 600
    N = 8

    def setup_cache(self):
        curves = k2_like(self.N)
        return curves, Replay(curves, backends.get_backend("auto"))

    def track_host_ms_per_curve(self, cached, lean):
        curves, replay = cached
        return host_seconds(curves, replay, lean=lean)["cpu_s_per_curve"] * 1e3

    def track_cpu_probe_us(self, cached, lean):
        return cpu_probe_us()

    track_cpu_probe_us.unit = "microseconds"

    def track_python_probe_us(self, cached, lean):
        return python_probe_us()

    track_python_probe_us.unit = "microseconds"


class Throughput:
    params = (["simple", "pruned", "tensor"],)
    param_names = ["backend"]
    unit = "light curves per second"
    timeout = 600
    N = 64

    def setup(self, name):
        self.backend = runnable_backend(name, 4320, 10000)
        self.curves = k2_like(self.N)
        self.jobs = plans_of(self.curves, {})
        self.backend.search_many(self.jobs)  # compile, allocate
        backends.search_batch(self.curves, backend=self.backend)

    def _rate(self, run):
        start = time.perf_counter()
        run()
        self.backend.synchronize()
        return self.N / (time.perf_counter() - start)

    def track_packed_curves_per_second(self, name):
        return self._rate(lambda: self.backend.search_many(self.jobs))

    def track_end_to_end_curves_per_second(self, name):
        return self._rate(lambda: backends.search_batch(self.curves, backend=self.backend))

    def track_lean_curves_per_second(self, name):
        return self._rate(lambda: backends.search_batch(self.curves, backend=self.backend, lean=True))

    def track_end_to_end_over_packed(self, name):
        return self.track_end_to_end_curves_per_second(name) / self.track_packed_curves_per_second(name)

    track_end_to_end_over_packed.unit = "ratio"
