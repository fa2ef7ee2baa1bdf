"""Registry: validated names, strict backends, ``auto``, TLS registration."""

import logging
import subprocess
import sys

import numpy as np
import pytest

import backends
from backends.implementations.cpu import CPUBackend
from backends.protocol import TLSBackend


class NeedsImaginaryGPU(CPUBackend):
    name = "imaginary"

    @classmethod
    def missing(cls):
        return "no FooGPU found (needs the foo driver)"


@pytest.fixture(autouse=True)
def no_variant_table(monkeypatch, tmp_path):
    """``auto`` follows AUTO_ORDER here, not a GPU's measured table."""
    monkeypatch.setenv("TLS_VARIANTS_DIR", str(tmp_path))


@pytest.fixture
def imaginary():
    backends.register_backend("imaginary", NeedsImaginaryGPU)
    yield "imaginary"
    backends.unregister_backend("imaginary")


def test_unknown_name_lists_known_backends():
    with pytest.raises(ValueError, match="known backends: auto, cpu"):
        backends.get_backend("cuda-magic")


def test_named_backend_that_cannot_run_is_an_error_not_a_fallback(imaginary):
    with pytest.raises(backends.BackendUnavailable, match="'imaginary' cannot run here: no FooGPU"):
        backends.get_backend(imaginary)
    assert backends.available_backends()[imaginary] == "no FooGPU found (needs the foo driver)"
    assert imaginary not in backends.available_methods()


def test_front_end_is_strict_too(imaginary, small_lc):
    with pytest.raises(backends.BackendUnavailable, match="FooGPU"):
        backends.search(*small_lc, backend=imaginary)


def test_missing_module_is_reported_as_reason():
    backends.register_backend("ghost", "backends.implementations.no_such_module:Ghost")
    try:
        assert "No module named" in backends.available_backends()["ghost"]
        with pytest.raises(backends.BackendUnavailable, match="cannot import backend module"):
            backends.get_backend("ghost")
    finally:
        backends.unregister_backend("ghost")


def test_auto_skips_what_cannot_run_and_says_what_it_chose(monkeypatch, imaginary, caplog):
    monkeypatch.setattr(backends.registry, "AUTO_ORDER", ["imaginary", "cpu"])
    with caplog.at_level(logging.INFO, logger="backends"):
        assert backends.resolve("auto") == "cpu"
    assert "backend 'auto' chose 'cpu'" in caplog.text


def test_auto_never_chooses_an_approximate_backend(monkeypatch):
    """An approximate backend that can run here is passed over: ``auto`` gives
    TLS's exact statistic; naming it still works."""
    from backends.implementations.cpu import CPUBackend

    class Rough(CPUBackend):
        name = "rough"
        exact = False

    backends.register_backend("rough", Rough)
    try:
        monkeypatch.setattr(backends.registry, "AUTO_ORDER", ["rough", "cpu"])
        assert backends.resolve("auto") == "cpu"
        assert backends.resolve("rough") == "rough"
    finally:
        backends.unregister_backend("rough")


def test_auto_is_recorded_in_meta(monkeypatch, small_lc):
    monkeypatch.setattr(backends.registry, "AUTO_ORDER", ["cpu"])
    results = backends.search(*small_lc)
    assert results.meta["requested_backend"] == "auto"
    assert results.meta["backend"] == "cpu"
    assert results.meta["auto_table"] == "default order"  # no GPU here


def test_meta_names_the_nearest_models_table_auto_followed(monkeypatch, small_lc):
    from backends import frontend, variants

    monkeypatch.delenv("TLS_VARIANTS_DIR")  # the tables shipped with the package
    monkeypatch.setattr(variants, "gpu_name", lambda: "NVIDIA H800 PCIe")
    assert frontend.auto_table() == "NVIDIA H200"  # the nearest model measured
    monkeypatch.setattr(variants, "gpu_name", lambda: "NVIDIA H100 80GB HBM3")
    assert frontend.auto_table() == "NVIDIA H100 80GB HBM3"


@pytest.mark.parametrize(
    "name, entry, error",
    [("", CPUBackend, ValueError), ("auto", CPUBackend, ValueError), ("x", object, TypeError),
     ("cpu", CPUBackend, ValueError)],
    ids=["empty", "reserved", "not-a-backend", "duplicate"],
)
def test_registration_is_validated(name, entry, error):
    with pytest.raises(error):
        backends.register_backend(name, entry)


def test_every_backend_is_in_tls_registry():
    from transitleastsquares.backends import available_backends as tls_names

    assert {f"bench-{n}" for n in backends.backend_names()} <= set(tls_names())


def test_registered_backend_runs_through_tls(imaginary):
    from transitleastsquares.backends import get_backend as tls_get

    with pytest.raises(backends.BackendUnavailable):
        tls_get("bench-imaginary")


def test_tls_bridge_does_not_import_the_registry():
    """The registry imports tls_bridge and hands it factories: no import circle."""
    import ast
    import inspect

    from backends import tls_bridge

    tree = ast.parse(inspect.getsource(tls_bridge))
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert "backends.registry" not in imported and "backends" not in imported
    assert tls_bridge.search_backend(CPUBackend()).name == "bench-cpu"


def test_gpu_backends_name_what_is_missing_without_a_gpu():
    if backends.gpu.cuda_device_count():
        pytest.skip("a GPU is present")
    for name in ("basic", "simple", "thrust", "cupy"):
        why = backends.available_backends()[name]
        assert why, f"{name} claims to run without a GPU"


def test_protocol_stages_are_the_same_methods_everywhere():
    stages = ("period_grid", "duration_grid", "template_cache", "upload", "fold_sort",
              "chi2_scan", "search", "synchronize", "max_batch_periods", "folds_in_scan", "missing")
    for name in backends.available_methods():
        cls = backends.registry.backend_class(name)
        assert issubclass(cls, TLSBackend)
        assert all(callable(getattr(cls, s)) for s in stages)


def test_import_creates_no_gpu_context():
    code = ("import sys, backends; backends.available_backends(); "
            "bad = [m for m in ('pycuda.autoinit', 'pycuda.autoprimaryctx', 'cupy', 'numba.cuda') "
            "if m in sys.modules]; print(bad); sys.exit(1 if bad else 0)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_stage_functions_match_tls_grids(small_plan):
    plan, periods = small_plan
    span = plan.lc.time_span
    np.testing.assert_array_equal(TLSBackend.period_grid(span), periods)
    durations = TLSBackend.duration_grid(periods)
    templates = TLSBackend.template_cache(durations, plan.lc.size)
    np.testing.assert_array_equal(templates.widths, plan.templates.widths)
    np.testing.assert_array_equal(templates.a, plan.templates.a)


def test_auto_never_picks_a_simulated_gpu(monkeypatch):
    """Under NUMBA_ENABLE_CUDASIM the numba backend runs without a GPU, but
    ``auto`` must not choose a simulator for real work."""
    if backends.gpu.cuda_device_count():
        pytest.skip("a GPU is present")
    monkeypatch.setenv("NUMBA_ENABLE_CUDASIM", "1")
    assert backends.available_backends()["numba"] is None
    monkeypatch.setattr(backends.registry, "AUTO_ORDER", ["numba", "cpu"])
    assert backends.resolve("auto") == "cpu"


def test_auto_skips_a_backend_that_refuses_the_light_curve(monkeypatch, small_lc, caplog):
    """A variant table may rank ``simple`` first; a light curve it cannot hold
    must go to the next backend, not fail."""

    class Tiny(CPUBackend):
        name = "tiny"

        def refuses(self, plan):
            return "holds at most 100 points"

    backends.register_backend("tiny", Tiny)
    try:
        monkeypatch.setattr(backends.registry, "AUTO_ORDER", ["tiny", "cpu"])
        with caplog.at_level(logging.INFO, logger="backends"):
            results = backends.search(*small_lc)
        assert results.meta["backend"] == "cpu"
        assert backends.resolve("auto") == "tiny"  # without a light curve nothing refuses
    finally:
        backends.unregister_backend("tiny")


def test_auto_builds_no_plan_when_no_candidate_can_refuse(monkeypatch):
    monkeypatch.setattr(backends.registry, "AUTO_ORDER", ["cpu"])

    def plan():
        raise AssertionError("plan built although no candidate refuses light curves")

    assert backends.get_backend("auto", plan=plan).name == "cpu"


def test_search_waits_for_the_device_after_the_upload_not_after_the_host_only_width_windows(small_plan, monkeypatch):
    from backends.plan import Plan

    calls = []

    class Spy(CPUBackend):
        def synchronize(self):
            calls.append("synchronize")

        def upload(self, plan):
            calls.append("upload")
            return super().upload(plan)

    windows = Plan.width_windows
    monkeypatch.setattr(Plan, "width_windows", lambda plan, periods: calls.append("windows") or windows(plan, periods))
    plan, periods = small_plan
    Spy().search(plan, periods)
    assert calls[:3] == ["windows", "upload", "synchronize"]


def test_period_stats_from_gains_take_the_widths_rows_and_row_zero_where_no_width_fits(small_plan):
    from backends.protocol import PeriodStats

    plan = small_plan[0]
    rows = plan.templates.rows
    assert rows[1] != 0  # else the missing fit's row could not be told from width 1's
    gain, index, depth = np.array([2.0, 0.0, 1.5]), np.array([1, -1, 0], np.int32), np.array([1e-3, 0.0, 2e-3])
    stats = PeriodStats.from_gains(plan, gain, index, depth)
    assert stats.rows.tolist() == [rows[1], 0, rows[0]] and stats.rows.dtype == np.int64
    assert np.array_equal(stats.chi2, plan.lc.chi2_flat - gain) and np.array_equal(stats.depths, depth)


def test_a_backend_asked_for_by_name_is_kept_per_thread_and_released(monkeypatch, small_lc):
    """One instance per thread for every search by name (its device tables and
    pool outlive a search), each search's meta its own; another thread gets its
    own; ``release_instances`` lets them go."""
    import threading

    from backends.registry import get_backend, release_instances

    made, init = [], CPUBackend.__init__
    monkeypatch.setattr(CPUBackend, "__init__", lambda self: made.append(self) or init(self))
    first = backends.search(*small_lc, backend="cpu", period_max=5.0)
    second = backends.search(*small_lc, backend="cpu", period_max=5.0)
    assert len(made) == 1 and get_backend("cpu") is made[0]
    assert second.meta["work"] == first.meta["work"]  # not accumulated over the kept instance's searches
    other = []
    thread = threading.Thread(target=lambda: other.append(get_backend("cpu")))
    thread.start()
    thread.join()
    assert other[0] is not made[0]
    release_instances()
    assert get_backend("cpu") is not made[0]
