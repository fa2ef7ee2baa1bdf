"""Shared fixtures: small seeded light curves that keep the CPU suite fast;
stand-in backends."""

import contextlib
import importlib.util
import itertools
import json
import os
import stat
import types

import numpy as np
import pytest

import backends
from backends.gpu import cuda_device_count
from backends.implementations.cpu import CPUBackend
from backends.registry import release_instances


@pytest.fixture(autouse=True)
def fresh_backend_instances():
    """Each test starts and ends without the thread's kept backend instances
    (``registry.kept_instance``): no state of one test reaches another."""
    release_instances()
    yield
    release_instances()


def box_light_curve(days=20.0, cadence_min=30.0, period=4.3, t0=1.1, depth=2e-3, noise=3e-4,
                    duration=0.12, epoch=0.0, seed=0, dy="varying"):
    """Seeded white-noise light curve with box transits (fast to search)."""
    rng = np.random.default_rng(seed)
    t = epoch + np.arange(0.0, days, cadence_min / 1440.0)
    y = 1.0 + rng.normal(0.0, noise, t.size)
    phase = ((t - t0) / period + 0.5) % 1.0 - 0.5
    y[np.abs(phase * period) < duration / 2] -= depth
    if dy is None:
        return t, y, None
    err = noise * (1.0 + 0.3 * rng.random(t.size)) if dy == "varying" else np.full(t.size, noise)
    return t, y, err


@pytest.fixture(scope="session")
def small_lc():
    return box_light_curve()


@pytest.fixture(scope="session")
def small_plan(small_lc):
    return backends.make_plan(*small_lc)


class UnavailableBackend(CPUBackend):
    """A backend that cannot run on this machine (register it to use it)."""

    name = "test-unavailable"

    @classmethod
    def missing(cls):
        return "not on this machine"


@contextlib.contextmanager
def registered(*classes):
    """The backend ``classes`` registered under their names within the block."""
    for cls in classes:
        backends.register_backend(cls.name, cls)
    try:
        yield
    finally:
        for cls in classes:
            backends.unregister_backend(cls.name)


def fake_pycuda(monkeypatch, driver):
    """``pycuda.driver`` replaced by ``driver`` for the test (host logic tried on a fake device)."""
    import sys
    from types import SimpleNamespace

    monkeypatch.setitem(sys.modules, "pycuda", SimpleNamespace(driver=driver))
    monkeypatch.setitem(sys.modules, "pycuda.driver", driver)
    return driver


class FakeDriver(types.ModuleType):
    """pycuda.driver on host memory: ``memory`` maps fake device addresses to
    bytearrays (filled with 0xff: cuMemAlloc does not zero), ``copies`` logs
    each copy as (kind, offset in its allocation, bytes), kinds "htod", "dtoh"
    and, asynchronous, "htod async", "dtoh async"; events tick a clock by one ms."""

    BASE = 1 << 40  # the first allocation's address

    def __init__(self):
        super().__init__("pycuda.driver")
        self.memory, self.copies, self.clock = {}, [], itertools.count()
        driver = self

        class Stream:
            def synchronize(self):
                pass

        class Event:
            def record(self, stream=None):
                self.tick, self.stream = next(driver.clock), stream

            def synchronize(self):
                pass

            def time_since(self, start):
                assert start.stream is self.stream  # events of one stream only
                return float(self.tick - start.tick)  # ms: one per event recorded between them

        class Alloc:
            def __init__(self, size):
                self.address = (len(driver.memory) + 1) * driver.BASE
                driver.memory[self.address] = bytearray(b"\xff" * size)

            def __int__(self):
                return self.address

        self.Stream, self.Event, self.mem_alloc = Stream, Event, Alloc
        self.pagelocked_empty = lambda size, dtype: np.zeros(size, dtype)

    def _log(self, kind, address, nbytes):
        self.copies.append((kind, address % self.BASE, nbytes))

    def memcpy_htod(self, dest, src):
        self._log("htod", int(dest), src.nbytes)
        self.at(int(dest), np.uint8, src.nbytes)[:] = np.frombuffer(src.tobytes(), np.uint8)

    def memcpy_dtoh(self, dest, src):
        self._log("dtoh", int(src), dest.nbytes)
        dest.view(np.uint8).reshape(-1)[:] = self.at(int(src), np.uint8, dest.nbytes)

    def memcpy_htod_async(self, dest, src, stream=None):
        self.memcpy_htod(dest, src)
        self.copies[-1] = ("htod async", *self.copies[-1][1:])

    def memcpy_dtoh_async(self, dest, src, stream=None):
        self.memcpy_dtoh(dest, src)
        self.copies[-1] = ("dtoh async", *self.copies[-1][1:])

    @property
    def data(self) -> bytearray:
        """The newest allocation's bytes."""
        return self.memory[max(self.memory)]

    def at(self, pointer, dtype, count):
        """``count`` values of ``dtype`` at device address ``pointer``, writable."""
        base = int(pointer) // self.BASE * self.BASE
        return np.frombuffer(self.memory[base], dtype, count, int(pointer) - base)


def gpu_available():
    return cuda_device_count() > 0


requires_gpu = pytest.mark.skipif(not gpu_available(), reason="no CUDA GPU on this machine")
requires_distributed = pytest.mark.skipif(importlib.util.find_spec("distributed") is None,
                                          reason="Dask's distributed is not installed (.whl-dask on the GPU machine)")


@pytest.fixture()
def npz_inputs(tmp_path):
    """A folder of three small light curves as ``.npz`` (validation.batch's input)."""
    folder = tmp_path / "in"
    folder.mkdir()
    for k in range(3):
        t, y, dy = box_light_curve(days=16.0, seed=k)
        np.savez(folder / f"lc{k}.npz", time=t, flux=y, flux_err=dy)
    return folder


# ---- asv result files ------------------------------------------------------------

def result_set(commit, date, seconds, spread=0.01, name="bench_stages.Search.time_search",
               machine="gpu-test"):
    """An asv result file (format 2) of one benchmark with params ('cpu', 500, 1000)."""
    samples = [seconds * (1 + spread * k) for k in (-1, 0, 1, 0, 1)]
    ci = (min(samples), max(samples))
    columns = ["result", "params", "version", "started_at", "duration", "stats_ci_99_a",
               "stats_ci_99_b", "stats_q_25", "stats_q_75", "stats_number", "stats_repeat",
               "samples"]
    row = [[seconds], [["'cpu'"], ["500"], ["1000"]], "v1", date, 1.0, [ci[0]], [ci[1]],
           [ci[0]], [ci[1]], [1], [len(samples)], [samples]]
    return {"commit_hash": commit, "env_name": "existing-py", "date": date,
            "params": {"machine": machine}, "python": "3.12", "requirements": {},
            "env_vars": {}, "result_columns": columns, "results": {name: row},
            "durations": {}, "version": 2}


def write_results(root, sets, name="bench_stages.Search.time_search", machine="gpu-test"):
    """asv results of ``sets`` for one machine and the suite description."""
    directory = root / machine
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "machine.json").write_text(json.dumps({"machine": machine, "version": 1}))
    for data in sets:
        (directory / f"{data['commit_hash'][:8]}-existing-py.json").write_text(json.dumps(data))
    (root / "benchmarks.json").write_text(json.dumps({"version": 2, name: {
        "name": name, "type": "time", "unit": "seconds", "version": "v1",
        "param_names": ["backend", "ndata", "nperiods"],
        "params": [["'cpu'"], ["500"], ["1000"]]}}))
    return root


NVIDIA_SMI_STUB = """#!/bin/sh
case "$1" in
  --query-gpu=*) printf '00000000:19:00.0, %s, 1000, %s, 1980\\n00000000:3B:00.0, 0, 500, [N/A], [N/A]\\n' \\
      "${UTIL:-50}" "${SM:-1980}" ;;
  --query-compute-apps=*) printf '4242, 00000000:3B:00.0, 600\\n' ;;
esac
"""


@pytest.fixture()
def smi(tmp_path, monkeypatch):
    """A stub nvidia-smi first on PATH: two GPUs (the first ``$UTIL`` % busy at
    ``$SM`` MHz, the second with no clocks), one process on the second."""
    stub = tmp_path / "bin" / "nvidia-smi"
    stub.parent.mkdir()
    stub.write_text(NVIDIA_SMI_STUB)
    stub.chmod(stub.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{stub.parent}{os.pathsep}{os.environ['PATH']}")
