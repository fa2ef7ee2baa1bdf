"""GPU: the PyCUDA backends reproduce the ``cpu`` backend's exact statistic
(per-period chi2, best period, SDE, SR), with every block size, at BKJD/BTJD
epochs, with compiled kernels cached across calls and threads."""

import threading

import numpy as np
import pytest

import backends
from backends.contract import assert_matches
from backends.gpu import cuda_device_count
from backends.implementations.pycuda_base import BLOCK_SIZES, KERNELS
from backends.implementations.simple import simple_shared_bytes
from backends.implementations.thrust import ThrustBackend
from tests.conftest import box_light_curve

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(cuda_device_count() == 0, reason="no CUDA GPU on this machine"),
]
NAMES = ["basic", "simple", "thrust"]


def _backend(name, **kw):
    why = backends.available_backends()[name]
    if why is not None:
        pytest.skip(f"{name}: {why}")
    return backends.registry.backend_class(name)(**kw)


def assert_same_spectrum(ours, ref, name):
    """Per-period chi2 within TLS's contract for backend ``name`` (exact or
    approximate) and the same best period."""
    assert_matches(ours, ref, backends.registry.backend_class(name).exact, name)
    assert np.argmin(ours.chi2) == np.argmin(ref.chi2)


@pytest.fixture(scope="module")
def cpu_cache():
    return {}


def cpu_search(cache, key, plan, periods):
    if key not in cache:
        cache[key] = backends.get_backend("cpu").search(plan, periods)
    return cache[key]


CASES = {
    "plain": dict(),
    "t~3000d": dict(epoch=3000.0, seed=2, dy=None),
    "odd-n": dict(days=20.77, seed=3),  # 997 points: no power of two anywhere
    "noise-only": dict(depth=0.0, seed=4),
}


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("case", sorted(CASES))
def test_per_period_matches_cpu(name, case, cpu_cache):
    plan, periods = backends.make_plan(*box_light_curve(**CASES[case]))
    ref = cpu_search(cpu_cache, case, plan, periods)
    ours = _backend(name).search(plan, periods)
    assert_same_spectrum(ours, ref, name)
    # float32 dot products: near-tied fits may swap at under 1 % of periods
    assert np.mean(ours.rows == ref.rows) > 0.99


@pytest.mark.parametrize("name", NAMES)
def test_periods_commensurate_with_the_cadence(name, cpu_cache):
    """Folds whose phases crowd onto a few values (exact ties included): simple's
    bucket sort takes its bitonic fallback there (checked below), and every
    backend keeps the (phase, index) order."""
    t, y, dy = box_light_curve(days=40.0, seed=10)  # 30-min cadence, 1,920 points
    plan, _ = backends.make_plan(t, y, dy, period_min=0.7, period_max=2.5)
    periods = np.array([0.75, 0.75 * (1 + 1e-9), 0.75 * (1 + 1e-5), 1.5, 1.5 * (1 - 1e-7), 2.3])
    x = plan.lc.t * (1 / 0.75)
    buckets = np.minimum(((x - np.floor(x)) * plan.lc.size).astype(int), plan.lc.size - 1)
    assert np.bincount(buckets).max() > 32  # bucket_sort.cuh's BUCKET_MAX
    ref = cpu_search(cpu_cache, "commensurate", plan, periods)
    assert_same_spectrum(_backend(name).search(plan, periods), ref, name)


@pytest.mark.parametrize("name", NAMES)
def test_end_to_end_matches_cpu(name):
    t, y, dy = box_light_curve(epoch=2900.0, seed=7)
    ref = backends.search(t, y, dy, backend="cpu")
    ours = backends.search(t, y, dy, backend=name)
    assert_matches(ours, ref, ours.meta["exact"], name)
    assert ours.meta["backend"] == name
    assert ours.meta["device"] == _backend(name).device_name()


@pytest.mark.parametrize("name", NAMES)
def test_every_block_size_gives_the_same_result(name, small_plan):
    plan, periods = small_plan
    periods = periods[::3]
    results = [_backend(name, block_size=b).search(plan, periods) for b in BLOCK_SIZES]
    for other in results[1:]:
        np.testing.assert_allclose(other.chi2, results[0].chi2, rtol=1e-12)
        np.testing.assert_array_equal(other.rows, results[0].rows)


@pytest.mark.parametrize("name", NAMES)
def test_small_batches_give_the_same_result(name, small_plan, monkeypatch):
    plan, periods = small_plan
    whole = _backend(name).search(plan, periods)
    backend = _backend(name)
    monkeypatch.setattr(backend, "max_batch_periods", lambda plan: 7)
    np.testing.assert_array_equal(backend.search(plan, periods).chi2, whole.chi2)


def test_simple_refuses_what_shared_memory_cannot_hold():
    t, y, dy = box_light_curve(days=30.0, cadence_min=2.0, seed=8)  # 21,600 points
    plan, periods = backends.make_plan(t, y, dy, period_min=5.0, period_max=5.1)
    backend = _backend("simple")
    assert "shared memory" in backend.refuses(plan)
    with pytest.raises(backends.protocol.InputTooLarge, match="shared memory"):
        backend.search(plan, periods)
    assert backend.timings["chi2_scan"] == 0.0  # nothing was launched


def test_simple_takes_the_largest_light_curve_it_admits():
    """Just under the limit: opting into > 48 KB of shared memory works."""
    backend = _backend("simple")
    n = 6000
    t, y, dy = box_light_curve(days=n * 30 / 1440, seed=9)
    plan, periods = backends.make_plan(t, y, dy, period_min=10.0, period_max=10.3)
    tp = plan.templates
    assert simple_shared_bytes(plan.lc.size, tp.maxwidth, tp.strides) > 48 * 1024
    ref = backends.get_backend("cpu").search(plan, periods)
    assert_same_spectrum(backend.search(plan, periods), ref, "simple")


@pytest.mark.parametrize("name", NAMES)
def test_repeated_searches_never_recompile(name, small_plan):
    plan, periods = small_plan
    backend = _backend(name)
    backend.search(plan, periods[:20])
    builds = KERNELS.builds
    for _ in range(3):
        _backend(name).search(plan, periods[:20])
    assert KERNELS.builds == builds


def test_50_threads_share_one_compilation_and_agree(small_plan):
    plan, periods = small_plan
    periods = periods[:40]
    KERNELS.clear()
    builds = KERNELS.builds
    barrier, results, errors = threading.Barrier(50), [], []

    def worker():
        try:
            backend = ThrustBackend(block_size=64)
            barrier.wait()
            results.append(backend.search(plan, periods).chi2)
        except Exception as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(50)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors[0]
    assert KERNELS.builds == builds + 1
    for chi2 in results[1:]:
        np.testing.assert_array_equal(chi2, results[0])


def test_shares_the_process_with_cupy_and_numba(small_plan):
    cupy = pytest.importorskip("cupy")
    numba_cuda = pytest.importorskip("numba.cuda")
    plan, periods = small_plan
    x = cupy.arange(10) ** 2
    basic = _backend("basic")
    first = basic.search(plan, periods[:30])
    numba_cuda.to_device(np.arange(5)).copy_to_host()
    again = basic.search(plan, periods[:30])
    np.testing.assert_array_equal(first.chi2, again.chi2)
    assert int(x.sum()) == 285
