"""``cupy`` backend: host-side rules everywhere; exactness against ``cpu``,
bounded memory and sharing a process with numba.cuda and PyCUDA on a GPU."""

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import backends
from backends.contract import assert_exact
from backends.gpu import cuda_device_count
from backends.implementations import cpu
from backends.implementations import cupy_backend as cb
from backends.kernel_cache import nvcc_command
from tests.conftest import box_light_curve
from tests.test_cuda_sources import parse_ptxas
from tests.test_numba_cuda import FOLD_CASES

ROOT = Path(__file__).parents[1]
needs_gpu = pytest.mark.skipif(
    cuda_device_count() == 0 or importlib.util.find_spec("cupy") is None,
    reason="needs a CUDA GPU and CuPy",
)


# ---- everywhere ------------------------------------------------------------------------
def test_missing_names_the_package_then_the_gpu(monkeypatch):
    monkeypatch.setattr(backends.gpu, "cuda_device_count", lambda: 0)
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *args: object())
    assert "no CUDA GPU" in cb.CuPyBackend.missing()
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *args: None)
    assert "'cupy'" in cb.CuPyBackend.missing()


@pytest.mark.parametrize("bad", [0, 96, 1024])
def test_block_size_must_be_a_listed_power_of_two(bad):
    with pytest.raises(ValueError, match="block_size"):
        cb.CuPyBackend(block_size=bad)
    backend = cb.CuPyBackend(block_size=64)
    assert (backend.block, backend.chunk) == (64, 64 * cb.SHIFTS_PER_THREAD)


def test_import_loads_no_gpu_framework():
    code = ("import sys, backends.implementations.cupy_backend as m; m.CuPyBackend.missing(); "
            "assert not [x for x in sys.modules if x.split('.')[0] in ('cupy', 'cupy_backends')]")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_an_edited_header_gives_a_new_module_and_a_new_cupy_cache_key(tmp_path, monkeypatch):
    """CuPy keys its on-disk cache on the code and options only, not on the
    -I headers: the sources' hash must be among the options."""
    import types

    from backends import kernel_cache

    cuda = tmp_path / "cuda"
    shutil.copytree(cb.CUDA_DIR, cuda)
    monkeypatch.setattr(kernel_cache, "CUDA_DIR", cuda)
    monkeypatch.setattr(cb, "CUDA_DIR", cuda)
    monkeypatch.setattr(cb, "_modules", kernel_cache.KernelCache())
    built = []
    cp = types.SimpleNamespace(
        cuda=types.SimpleNamespace(Device=lambda: types.SimpleNamespace(id=0)),
        RawModule=lambda code, options: built.append(options) or object())
    first = cb._module(cp, 128, 512)
    assert cb._module(cp, 128, 512) is first and len(built) == 1
    header = cuda / "tls_common.cuh"
    header.write_text(header.read_text() + "\n// edited\n")
    assert cb._module(cp, 128, 512) is not first and len(built) == 2
    assert built[0] != built[1]  # what CuPy's own cache keys on differs
    assert f"-DTLS_SOURCES={kernel_cache.sources_digest()}" in built[1]


def test_batch_budget_counts_every_patched_sample(small_plan):
    plan, _ = small_plan
    assert cb.bytes_per_period(plan) == cb.BYTES_PER_SAMPLE * (
        plan.lc.size + plan.templates.maxwidth)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
@pytest.mark.parametrize("block", [32, 128, 256])
def test_scan_source_compiles_without_spills(block, tmp_path):
    cmd = nvcc_command(cb.SOURCE, "sm_90", {"BLOCK": block}, ["-Xptxas", "-v"],
                       tmp_path / "k.cubin")
    done = subprocess.run(cmd, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    report = parse_ptxas(done.stderr)
    assert set(report) == {"scan_jobs", "reduce_jobs"}
    assert all(tuple(spills) == (0, 0, 0) for _, *spills in report.values())


# ---- on a GPU ----------------------------------------------------------------------------
def _assert_same(got, ref):
    assert_exact(got, ref, "vs cpu")
    assert np.mean(got.rows == ref.rows) > 0.999
    np.testing.assert_allclose(got.depths, ref.depths, rtol=0, atol=1e-9)


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("case", [dict(), dict(epoch=3000.0, seed=2, dy=None)],
                         ids=["plain", "t~3000d"])
def test_per_period_stats_match_cpu_in_any_batching(case, monkeypatch):
    backend = backends.get_backend("cupy")
    plan, periods = backends.make_plan(*box_light_curve(**case))
    ref = backends.get_backend("cpu").search(plan, periods)
    _assert_same(backend.search(plan, periods), ref)
    monkeypatch.setattr(cb, "BATCH_BYTES", 37 * cb.bytes_per_period(plan))
    small_blocks = cb.CuPyBackend(block_size=32)
    assert small_blocks.max_batch_periods(plan) == 37
    _assert_same(small_blocks.search(plan, periods), ref)


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("case", sorted(FOLD_CASES))
def test_fold_sort_is_the_cpus_stable_order(small_plan, case):
    t, periods = FOLD_CASES[case]
    periods = np.array(periods)
    y = 1.0 + np.random.default_rng(3).normal(0.0, 1e-3, t.size)
    lc = backends.LightCurve.from_arrays(t, y, np.full(t.size, 1e-3))
    plan = backends.Plan(lc, small_plan[0].templates, 1.0, 1.0, 1.0, 1.0)
    backend = backends.get_backend("cupy")
    rw, w, csum = (x.get() for x in backend.fold_sort(backend.upload(plan), periods))
    for k, period in enumerate(periods):
        f, fw = cpu.fold_sort_period(t, y, lc.w, period, plan.templates.maxwidth)
        np.testing.assert_array_equal(w[k], fw)
        np.testing.assert_array_equal(rw[k], (1.0 - f) * fw)
        np.testing.assert_allclose(csum[k], np.concatenate([[0.0], np.cumsum(f)]), rtol=1e-13)


@pytest.mark.gpu
@needs_gpu
def test_no_passing_shift_keeps_the_flat_chi2(small_plan):
    plan, periods = small_plan
    bright = backends.LightCurve.from_arrays(plan.lc.t, 1.0 + np.abs(plan.lc.y - 1.0),
                                             np.ones(plan.lc.size))
    plan = backends.Plan(bright, plan.templates, plan.R_star_min, plan.R_star_max,
                         plan.M_short, plan.M_long)
    got = backends.get_backend("cupy").search(plan, periods[:50])
    np.testing.assert_array_equal(got.chi2, np.full(50, bright.chi2_flat))
    assert not got.rows.any() and not got.depths.any()


@pytest.mark.gpu
@needs_gpu
def test_frameworks_share_one_process(small_plan):
    """CuPy, numba.cuda and PyCUDA backends one after another, twice round."""
    plan, periods = small_plan
    subset = periods[::10]
    ref = backends.get_backend("cpu").search(plan, subset)
    names = [n for n in ("cupy", "numba", "basic") if backends.available_backends()[n] is None]
    assert "cupy" in names
    for name in names + names:
        _assert_same(backends.get_backend(name).search(plan, subset), ref)


@pytest.mark.gpu
@pytest.mark.slow
@needs_gpu
def test_3000_day_two_minute_light_curve_stays_in_budget():
    """GTLS runs out of memory here; batches keep the pool near BATCH_BYTES."""
    import cupy as cp

    t, y, dy = box_light_curve(days=3000.0, cadence_min=2.0, period=300.0, t0=100.0,
                               duration=0.5)
    plan, periods = backends.make_plan(t, y, dy)
    backend = backends.get_backend("cupy")
    subset = periods[np.linspace(0, periods.size - 1, 7).astype(int)]
    assert backend.max_batch_periods(plan) < subset.size  # more than one batch
    pool = cp.get_default_memory_pool()
    pool.free_all_blocks()
    peak = 0

    def tracking_malloc(size):  # CuPy's thrust sort scratch comes through here too
        nonlocal peak
        memory = pool.malloc(size)
        peak = max(peak, pool.used_bytes())
        return memory

    cp.cuda.set_allocator(tracking_malloc)
    try:
        got = backend.search(plan, subset)
    finally:
        cp.cuda.set_allocator(pool.malloc)
    uploaded = 8 * (3 * plan.lc.size + 2 * plan.templates.a.size)
    print(f"n={plan.lc.size} periods={periods.size} peak={peak / 2**20:.0f} MiB "
          f"batch={backend.max_batch_periods(plan)} timings={dict(backend.timings)}")
    assert peak <= cb.BATCH_BYTES + uploaded
    ref = backends.get_backend("cpu").search(plan, subset)
    _assert_same(got, ref)
