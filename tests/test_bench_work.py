"""asv's work-counter tracks (benchmarks/bench_work.py): the counters of a
pruned search, deterministic, and a skip for a backend that cannot run."""

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
