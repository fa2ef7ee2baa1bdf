"""Shared fixtures: small seeded light curves that keep the CPU suite fast;
stand-in backends."""

import contextlib
import importlib.util

import numpy as np
import pytest

import backends
from backends.gpu import cuda_device_count
from backends.implementations.cpu import CPUBackend


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
