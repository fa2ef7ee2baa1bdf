"""``numba`` backend against ``cpu``: on a GPU when there is one, otherwise in
numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1, set here for this module only).
The simulator runs a Python thread per CUDA thread, so inputs are tiny."""

import importlib.util
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import backends
from backends.contract import assert_exact
from backends.gpu import cuda_device_count
from backends.implementations import cpu
from backends.implementations import numba_cuda as nc

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("numba_cuda") is None, reason="numba-cuda is not installed"
)


@pytest.fixture(scope="module")
def backend():
    with pytest.MonkeyPatch.context() as mp:
        if cuda_device_count() == 0:
            if "numba.cuda" in sys.modules and not nc.simulator():
                pytest.skip("numba.cuda was imported without the simulator and there is no GPU")
            mp.setenv("NUMBA_ENABLE_CUDASIM", "1")
        yield backends.get_backend("numba")


def _tiny_plan(n=120, seed=1, dip=0.01, **options):
    rng = np.random.default_rng(seed)
    t = np.sort(rng.uniform(0.0, 12.0, n))
    y = 1.0 + rng.normal(0.0, 1e-3, n)
    y[(t % 3.1) < 0.12] -= dip
    dy = rng.uniform(0.8e-3, 1.2e-3, n)
    # narrow stellar limits: few template widths per period keep the simulator fast
    limits = dict(period_min=2.8, period_max=3.4, R_star_min=0.7, R_star_max=1.3,
                  M_star_min=0.6, M_star_max=1.2)
    with warnings.catch_warnings():  # TLS warns that it widens the short period grid
        warnings.simplefilter("ignore")
        return backends.make_plan(t, y, dy, **limits, **options)


def _assert_same(got, ref):
    assert_exact(got, ref, "numba vs cpu")
    np.testing.assert_array_equal(got.rows, ref.rows)
    np.testing.assert_allclose(got.depths, ref.depths, rtol=0, atol=1e-12)


def test_per_period_stats_match_cpu_across_batches(backend, monkeypatch):
    plan, periods = _tiny_plan()
    subset = periods[::4][:6]
    monkeypatch.setattr(nc, "BATCH_BYTES", 4 * nc.bytes_per_period(plan))  # batches of 4 + 2
    assert backend.max_batch_periods(plan) == 4
    got = backend.search(plan, subset)
    ref = backends.get_backend("cpu").search(plan, subset)
    _assert_same(got, ref)
    assert np.all(got.rows > 0)  # the dip is found: not the no-fit fallback


def _even_k2(n=101):
    """Evenly sampled K2-cadence times at t ~ 3000 d and P = span / 2, where
    samples tie in exact arithmetic and TLS's fastmath rounding decides."""
    t = 3000.0 + np.arange(n) * (29.4 / 1440.0)
    return t, [(t[-1] - t[0]) / 2]


FOLD_CASES = {  # times, periods
    "exact-ties": (np.arange(40) * 0.5, [0.5, 1.0, 1.2345]),  # times on multiples of P
    "rounded-ties": _even_k2(),
}


@pytest.mark.parametrize("case", sorted(FOLD_CASES))
def test_fold_sort_is_the_cpus_stable_order(backend, case):
    t, periods = FOLD_CASES[case]
    periods = np.array(periods)
    y = 1.0 + np.random.default_rng(3).normal(0.0, 1e-3, t.size)
    plan = backends.Plan(backends.LightCurve.from_arrays(t, y, np.full(t.size, 1e-3)),
                         _tiny_plan()[0].templates, 1.0, 1.0, 1.0, 1.0)
    r, w = (x.copy_to_host() for x in backend.fold_sort(backend.upload(plan), periods))
    for k, period in enumerate(periods):
        f, fw = cpu.fold_sort_period(t, y, plan.lc.w, period, plan.templates.maxwidth)
        np.testing.assert_array_equal(r[k], 1.0 - f)
        np.testing.assert_array_equal(w[k], fw)


def test_no_passing_shift_keeps_the_flat_chi2(backend):
    """Flux never below 1: no box depth passes, so gain 0, row 0, depth 0."""
    plan, periods = _tiny_plan(n=60, dip=0.0)
    bright = backends.LightCurve.from_arrays(plan.lc.t, 1.0 + np.abs(plan.lc.y - 1.0),
                                             np.ones(plan.lc.size))
    plan = backends.Plan(bright, plan.templates, plan.R_star_min, plan.R_star_max,
                         plan.M_short, plan.M_long)
    got = backend.search(plan, periods[:3])
    np.testing.assert_array_equal(got.chi2, np.full(3, bright.chi2_flat))
    assert not got.rows.any() and not got.depths.any()


def test_batches_bound_device_memory(small_plan):
    plan, _ = small_plan
    backend = nc.NumbaCUDABackend()
    batch = backend.max_batch_periods(plan)
    assert 1 <= batch <= nc.MAX_BATCH_PERIODS
    assert batch * nc.bytes_per_period(plan) <= nc.BATCH_BYTES
    assert nc.bytes_per_period(plan) > 16 * plan.lc.size


@pytest.mark.parametrize("bad", [0, 96, 1024])
def test_block_size_must_be_a_listed_power_of_two(bad):
    with pytest.raises(ValueError, match="block_size"):
        nc.NumbaCUDABackend(block_size=bad)
    assert nc.NumbaCUDABackend(block_size=64).block == 64


def test_missing_names_the_package_then_the_gpu(monkeypatch):
    monkeypatch.delenv("NUMBA_ENABLE_CUDASIM", raising=False)
    monkeypatch.setattr(backends.gpu, "cuda_device_count", lambda: 0)
    assert "no CUDA GPU" in nc.NumbaCUDABackend.missing()
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *args: None)
    assert "numba_cuda" in nc.NumbaCUDABackend.missing()
    monkeypatch.setenv("NUMBA_ENABLE_CUDASIM", "1")
    assert "numba_cuda" in nc.NumbaCUDABackend.missing()  # simulator, but no package


def test_simulator_needs_no_gpu(monkeypatch):
    monkeypatch.setenv("NUMBA_ENABLE_CUDASIM", "1")
    monkeypatch.setattr(backends.gpu, "cuda_device_count", lambda: 0)
    assert nc.NumbaCUDABackend.missing() is None


def test_import_loads_no_gpu_framework():
    code = ("import sys, backends.implementations.numba_cuda as m; m.NumbaCUDABackend.missing(); "
            "assert not [x for x in sys.modules if x.startswith('numba.cuda')]")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).parents[1])
