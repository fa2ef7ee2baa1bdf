"""asv's work-counter tracks (benchmarks/bench_work.py): the counters of a
pruned search, deterministic; tensor's own counters (or its skip without a
GPU); a skip for a backend that cannot run."""

import pytest

from backends.pruning import COUNTERS
from benchmarks import bench_work


@pytest.fixture()
def one_case(monkeypatch):
    monkeypatch.setattr(bench_work, "NDATA", [500])
    monkeypatch.setattr(bench_work, "NPERIODS", [1000])
    monkeypatch.setattr(bench_work, "PRUNED", ["cpu", "not-a-backend"])


def tracks(found, name):
    bench = bench_work.Work()
    bench.setup(found, name, 500, 1000)
    return {c: getattr(bench, f"track_{c}")(found, name, 500, 1000)
            for c in (*COUNTERS, "fraction_of_brute_force")}


def test_tracks_read_the_counters_of_a_search_and_repeat_exactly(one_case):
    first = tracks(bench_work.Work().setup_cache(), "cpu")
    again = tracks(bench_work.Work().setup_cache(), "cpu")
    assert first == again
    assert first["shifts"] > first["fine_pass"] > 0 and first["bound_violations"] == 0
    assert 0 < first["fraction_of_brute_force"] < 1


def test_a_backend_that_cannot_run_is_skipped(one_case):
    with pytest.raises(NotImplementedError, match="not-a-backend"):
        bench_work.Work().setup(bench_work.Work().setup_cache(), "not-a-backend", 500, 1000)


def test_tensor_tracks_its_own_counters_or_skips_without_a_gpu(monkeypatch):
    import backends
    from backends.implementations import tensor

    monkeypatch.setattr(bench_work, "NDATA", [500])
    monkeypatch.setattr(bench_work, "NPERIODS", [1000])
    assert {name[len("track_"):] for name in dir(bench_work.TensorWork) if name.startswith("track_")} == {
        *tensor.WORK, "fraction_of_brute_force"}
    bench = bench_work.TensorWork()
    found = bench.setup_cache()
    if backends.available_backends()["tensor"] is not None:
        with pytest.raises(NotImplementedError, match="tensor"):
            bench.setup(found, "tensor", 500, 1000)
        return
    bench.setup(found, "tensor", 500, 1000)
    assert bench.track_rechecked(found, "tensor", 500, 1000) > 0 and bench.work["bound_violations"] == 0
    assert 0 < bench.track_fraction_of_brute_force(found, "tensor", 500, 1000) < 1


def test_a_summary_holds_the_counters_a_search_counted():
    from backends.pruning import work_summary

    assert work_summary({"kept": 3, "exact_macs": 5, "brute_force_macs": 20}) == {
        "kept": 3, "exact_macs": 5, "brute_force_macs": 20, "fraction_of_brute_force": 0.25}
