"""scripts/exactness.py: one line, before any search, for a backend that cannot
run; each backend held to TLS's contract by its ``exact`` attribute."""

import pandas as pd
import pytest
from conftest import UnavailableBackend, box_light_curve, registered

from backends.implementations.cpu import CPUBackend

import exactness


class Approximate(CPUBackend):
    name = "approximate"
    exact = False


@pytest.fixture
def stand_ins():
    with registered(UnavailableBackend, Approximate):
        yield


@pytest.mark.parametrize("name, message", [
    (UnavailableBackend.name, f"backend '{UnavailableBackend.name}' cannot run here: not on this machine"),
    ("nope", "unknown backend 'nope'")])
def test_a_backend_that_cannot_run_is_one_line_before_any_search(stand_ins, name, message, monkeypatch,
                                                                 capsys, tmp_path):
    monkeypatch.setattr(exactness, "run_fused", lambda *a: pytest.fail("a search ran"))
    assert exactness.main(["--backends", "cpu", name, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {message}") and err.count("\n") == 1


class Found(dict):
    """A TLS results object's keys, as attributes too."""

    __getattr__ = dict.__getitem__


def found(chi2_scale=1.0, SDE=12.0):
    return Found(chi2=[10.0 * chi2_scale, 20.0], periods=[1.0, 2.0], period=2.0, T0=1.0, duration=0.1,
                 depth=0.999, SDE=SDE, snr=9.0)


def test_each_backend_meets_its_own_contract(stand_ins):
    ref = found()
    close = found(chi2_scale=1 + 1e-4, SDE=12.1)  # within the approximate bar, not the exact one
    row = exactness.compare("c", 100, "approximate", "cpu", close, ref, 1.0)
    assert row["contract"] == "approximate" and row["verdict"] == "approximate" and row["ok"]
    row = exactness.compare("c", 100, "cpu", "fused", close, ref, 1.0)
    assert row["contract"] == "exact" and not row["ok"]
    assert exactness.compare("c", 100, "cpu", "fused", found(), ref, 1.0)["ok"]


def test_a_sweep_writes_its_table(stand_ins, monkeypatch, tmp_path):
    monkeypatch.setattr(exactness, "cases", lambda *a: [("box", *box_light_curve(days=10.0))])
    assert exactness.main(["--backends", "cpu", "approximate", "--threads", "1", "--out", str(tmp_path)]) == 0
    table = pd.read_csv(tmp_path / "exactness.csv")
    assert list(table["backend"]) == ["cpu", "approximate"] and table["ok"].all()
    assert list(table["contract"]) == ["exact", "approximate"]
    assert "TLS's contract" in (tmp_path / "exactness.md").read_text()
