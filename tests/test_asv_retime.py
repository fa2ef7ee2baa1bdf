"""``scripts/asv_retime.py``: every case timed in every tree, in the trees' order,
each tree's own code; a tree that fails stops the run with its error."""

import json
import os
from pathlib import Path

import asv_retime


def fake_tree(root: Path, bench_search: str) -> Path:
    """A source tree whose ``benchmarks/bench_search.py`` is ``bench_search``."""
    (root / "benchmarks").mkdir(parents=True)
    (root / "benchmarks" / "__init__.py").write_text("")
    (root / "benchmarks" / "bench_search.py").write_text(bench_search)
    return root


def sleeping(seconds: float) -> str:
    """A ``bench_search`` whose ``search`` sleeps ``seconds``."""
    return f"import time\n\ndef search(name, ndata, nperiods):\n    time.sleep({seconds})\n"


def test_parse_case():
    assert asv_retime.parse_case("pruned:500:10000") == ("pruned", 500, 10000)


def test_each_tree_times_its_own_code_in_order(tmp_path, capsys):
    fast, slow = fake_tree(tmp_path / "fast", sleeping(0.001)), fake_tree(tmp_path / "slow", sleeping(0.05))
    out = tmp_path / "retime.json"
    assert asv_retime.main(["--trees", str(fast), str(slow), str(fast), "--cases", "cpu:500:1000", "pruned:20:30",
                            "--repeats", "3", "--out", str(out)]) == 0
    runs = json.loads(out.read_text())["runs"]
    assert [r["tree"] for r in runs] == [str(fast), str(slow), str(fast)]
    for case in ("cpu:500:1000", "pruned:20:30"):
        medians = [r["times"][case][0] for r in runs]
        assert medians[1] >= 0.05 and max(medians[0], medians[2]) < medians[1] / 2  # a loaded machine's slack
    assert "pruned:20:30" in capsys.readouterr().out


def test_a_tree_that_fails_stops_the_run(tmp_path, capsys):
    broken = fake_tree(tmp_path / "broken", "raise ImportError('no search here')\n")
    assert asv_retime.main(["--trees", str(broken), "--cases", "cpu:500:1000", "--repeats", "1"]) != 0
    assert "no search here" in capsys.readouterr().err


def test_a_tree_without_the_benchmarks_is_refused_not_timed_from_elsewhere(tmp_path, capsys, monkeypatch):
    """With another tree's benchmarks importable (an editable install, or
    PYTHONPATH), a tree without its own must be refused before anything of
    the other is imported (on the GPU machine that import failed first)."""
    elsewhere = fake_tree(tmp_path / "elsewhere", sleeping(0.0))
    (elsewhere / "benchmarks" / "__init__.py").write_text("raise ImportError('imported from elsewhere')\n")
    monkeypatch.setenv("PYTHONPATH", str(elsewhere), prepend=os.pathsep)
    empty = tmp_path / "empty"
    empty.mkdir()
    assert asv_retime.main(["--trees", str(empty), "--cases", "cpu:500:1000", "--repeats", "1"]) != 0
    err = capsys.readouterr().err
    assert "has no benchmarks.bench_search of its own" in err and "imported from elsewhere" not in err
