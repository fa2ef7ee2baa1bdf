"""validation.protocol: its light curves (protocol_cases), the run (resumable, time-bounded,
interruptible), the report, and the host logic of scripts/gpu_protocol.sh."""

import json
import os
import shutil
import subprocess
import tarfile
import time
import types
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from conftest import UnavailableBackend, registered
from backends.registry import resolve
from backends.implementations.cpu import CPUBackend
from validation import processes, protocol, protocol_cases, protocol_report, store, tlscache

ROOT = Path(__file__).resolve().parents[1]


# ---------------------------------------------------------------- the light curves

def test_items_are_fixed_by_seed_cadence_set_and_index():
    layout = protocol_cases.cadence("ffi10min")
    a, b = (protocol_cases.build(layout, "injections", 5, seed=0) for _ in range(2))
    assert np.array_equal(a.y, b.y) and a.info == b.info
    others = [protocol_cases.build(layout, "injections", 8, seed=0),
              protocol_cases.build(layout, "injections", 5, seed=1),
              protocol_cases.build(protocol_cases.cadence("tess2min"), "injections", 5, seed=0)]
    assert all(o.info["truth_period"] != a.info["truth_period"] for o in others)
    cal, test = (protocol_cases.build(layout, s, 0, seed=0) for s in ("calibration", "test"))
    assert cal.t.size == test.t.size and not np.array_equal(cal.y, test.y)  # independent draws


def test_every_block_of_injections_holds_the_whole_design():
    block = len(protocol_cases.NOISES) * len(protocol_cases.SNRS) * len(protocol_cases.IMPACTS) * 3
    designs = [protocol_cases.design(i) for i in range(block)]
    assert len(set(designs)) == block and protocol_cases.design(block) == designs[0]
    assert [d[0] for d in designs[:3]] == ["white", "red", "real"]


def test_nulls_of_each_noise():
    layout = protocol_cases.cadence("k2")
    white, red, real = (protocol_cases.build(layout, "test", i, seed=0) for i in range(3))
    assert white.info == dict(noise="white", source="synthetic") and red.info["noise"] == "red"
    assert np.std(white.y) == pytest.approx(layout.noise_ppm * 1e-6, rel=0.1)
    assert np.std(red.y) > np.std(white.y) and red.dy[0] > white.dy[0]
    assert real.info["source"] in layout.real and np.ptp(real.t) < layout.baseline


def test_injections_meet_their_design():
    layout = protocol_cases.cadence("ffi10min")
    for index in (0, 4, 54, 221):  # SNR 5 white, 7 red, grazing (b = 1), duration x2 real
        item = protocol_cases.build(layout, "injections", index, seed=0)
        noise, snr, b, factor = protocol_cases.design(index)
        info = item.info
        assert (info["noise"], info["snr_design"], info["truth_b"], info["duration_factor"]) == (
            noise, snr, b, factor)
        assert info["truth_snr"] == pytest.approx(snr, rel=0.1)
        assert layout.period_min <= info["truth_period"] <= layout.period_max
        assert info["grazing"] == (b >= 1 - info["truth_rp_rs"])
        assert np.min(item.y / protocol_cases.build(layout, "injections", index, seed=0).y) == 1.0
    assert protocol_cases.build(layout, "injections", 54, seed=0).info["grazing"]


def test_an_injection_that_never_falls_on_data_is_an_error(monkeypatch):
    monkeypatch.setattr(protocol_cases, "PLACEMENT_TRIES", 0)
    with pytest.raises(RuntimeError, match="no transit of k2 injection 3 fell on data"):
        protocol_cases.build(protocol_cases.cadence("k2"), "injections", 3, seed=0)


def test_cadences():
    quick = protocol_cases.cadence("tess2min-quick")
    assert quick.baseline == protocol_cases.QUICK["baseline"] and quick.cadence_min == 2.0
    assert protocol_cases.cadence("k2").options == dict(period_min=1.0, period_max=20.0)
    for name in ("kepler", "k2-slow"):
        with pytest.raises(ValueError, match="unknown cadence"):
            protocol_cases.cadence(name)


# ---------------------------------------------------------------- scoring

def test_scoring_counts_a_failed_search_against_its_column():
    truth = dict(truth_period=3.0, truth_t0=1.0, truth_duration=0.1, truth_depth_ppm=500.0)
    hit = dict(period=3.0, t0=1.0, duration=0.1, depth_ppm=500.0, sde=20.0, error=None)
    failed = dict.fromkeys(hit, np.nan) | {"error": "RuntimeError: boom"}
    quiet = dict(hit, sde=5.0)
    rows = [("injections", truth, hit, hit), ("injections", truth, failed, hit),
            ("injections", truth, dict(hit, period=6.0), hit),  # an alias: not recovered
            ("test", {}, failed, quiet), ("test", {}, hit, quiet), ("test", {}, quiet, quiet),
            ("calibration", {}, hit, hit)]
    df = pd.DataFrame([dict(cadence="k2", set=s, **t, **{f"backend_{k}": v for k, v in b.items()},
                            **{f"reference_{k}": v for k, v in r.items()},
                            **{f"tls_{k}": np.nan for k in hit}, complete=True)
                       for s, t, b, r in rows])
    run = types.SimpleNamespace(backend="x", reference="x")
    scored = protocol_report.score(df, run, {"k2": 9.0})
    assert scored["backend_recovered"].tolist() == [True, False, False] + [False] * 4
    assert scored["backend_alias"][2] == "2x"
    assert scored["backend_false_positive"].tolist() == [False] * 3 + [True, True, False, False]
    counts = protocol_report.counts(scored)
    assert (counts.lost, counts.gained, counts.extra, counts.fewer) == (2, 0, 2, 0)


# ---------------------------------------------------------------- the command, end to end

@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    """``--quick`` on the cpu backend over the three cadences (CPU TLS on 1 item a set)."""
    out = tmp_path_factory.mktemp("protocol")
    status = protocol.main(["--backend", "cpu", "--quick", "--out", str(out)])
    return out, status


def test_quick_runs_end_to_end_and_reports(quick_run):
    out, status = quick_run
    assert status == 1  # a handful of searches cannot show a method passes
    for name in ("protocol_cpu_quick.md", "protocol_cpu_quick.csv", "protocol_cpu_quick.json",
                 "protocol_cpu_quick_summary.csv", "figures/protocol_cpu_quick_recovery_vs_snr.png",
                 "figures/protocol_cpu_quick_false_positives.png"):
        assert (out / name).stat().st_size > 0, name
    manifest = json.loads((out / "protocol_cpu_quick.json").read_text())
    assert manifest["sizes_planned"] == protocol.QUICK_SIZES and manifest["complete"]
    assert manifest["reference"]["beyond"] == "cpu" and "transitleastsquares" in manifest["versions"]
    for name in ("k2-quick", "tess2min-quick", "ffi10min-quick"):
        c = manifest["cadences"][name]
        assert (c["calibration_run"], c["injections_run"], c["test_run"]) == (3, 6, 3)
        assert c["tls_searches"] == 3 * protocol.QUICK_SUBSET and not c["passed"] and c["reasons"]
    table = pd.read_csv(out / "protocol_cpu_quick.csv")
    assert len(table) == 36 and table["complete"].all() and table["backend_error"].isna().all()
    np.testing.assert_allclose(table["backend_sde"], table["reference_sde"], rtol=1e-7)  # exact
    assert (table["reference_from"] == "tls-fused").sum() == 9
    assert "INCOMPLETE" not in (out / "protocol_cpu_quick.md").read_text()
    assert sum(f.stat().st_size for f in (out / "cache").rglob("*")) < 200_000  # small journal


def test_a_second_run_resumes_and_only_reports(quick_run, capsys):
    out, _ = quick_run
    assert protocol.main(["--backend", "cpu", "--quick", "--out", str(out)]) == 1
    assert "45/45 searches already journaled" in capsys.readouterr().err
    assert protocol.main(["--backend", "cpu", "--quick", "--out", str(out), "--report-only"]) == 1


def test_larger_sizes_extend_a_run(quick_run, tmp_path, capsys):
    out = tmp_path / "out"
    shutil.copytree(quick_run[0], out)
    assert protocol.main(["--backend", "cpu", "--quick", "--cadence", "k2", "--out", str(out),
                          "--test-nulls", "4"]) == 1
    assert "15/16 searches already journaled" in capsys.readouterr().err
    table = pd.read_csv(out / "protocol_cpu_k2_quick.csv")
    assert (table["set"] == "test").sum() == 4 and table["complete"].all()


def test_out_of_time_keeps_what_finished_and_resumes(tmp_path, capsys):
    args = ["--backend", "cpu", "--quick", "--cadence", "k2", "--out", str(tmp_path)]
    assert protocol.main([*args, "--max-seconds", "1e-6"]) == protocol.INCOMPLETE
    err = capsys.readouterr().err
    assert "out of time" in err and "run the same command again" in err
    assert "INCOMPLETE" in (tmp_path / "protocol_cpu_k2_quick.md").read_text()
    assert protocol.main(args) == 1
    capsys.readouterr()
    assert protocol.main([*args, "--fresh", "--max-seconds", "1e-6"]) == protocol.INCOMPLETE
    assert "0/15 searches already journaled" in capsys.readouterr().err  # CPU TLS cache kept


def test_run_tasks_deadline_ends_the_workers(tmp_path):
    finished = []
    start = time.monotonic()
    with pytest.raises(processes.OutOfTime):
        processes.run_tasks([0.0, 0.0, 30.0, 30.0], time.sleep, lambda task, _: finished.append(task),
                            jobs=2, deadline=time.monotonic() + 10.0)  # workers start slowly on a busy machine
    assert finished == [0.0, 0.0] and time.monotonic() - start < 25.0
    with pytest.raises(processes.OutOfTime):  # here (jobs 1): no task starts past it
        processes.run_tasks([0.0], time.sleep, None, deadline=time.monotonic() - 1)


@pytest.mark.parametrize("error, status, message", [
    (KeyboardInterrupt, processes.INTERRUPTED, "interrupted: finished searches are kept"),
    (processes.WorkerDied("a worker process died (pid 1 killed by SIGKILL)"), 3, "SIGKILL"),
])
def test_interrupted_or_dead_workers(monkeypatch, tmp_path, capsys, error, status, message):
    def stop(*args, **kwargs):
        raise error

    monkeypatch.setattr(protocol, "execute", stop)
    assert protocol.main(["--backend", "cpu", "--quick", "--out", str(tmp_path)]) == status
    assert message in capsys.readouterr().err
    assert not list(tmp_path.glob("protocol_*.md"))


def test_reference_only_fills_a_cache_to_carry(tmp_path, capsys):
    here, there = tmp_path / "here", tmp_path / "there"
    args = ["--quick", "--cadence", "k2", "--reference-only"]
    assert protocol.main([*args, "--out", str(here)]) == 0
    assert not list(here.glob("protocol_*")) and len(list((here / "cache" / "tls").glob("*.npz"))) == 3
    tlscache.pack(here / "cache" / "tls", tmp_path / "pack.npz")
    assert tlscache.unpack(tmp_path / "pack.npz", there / "cache" / "tls") == 3
    assert protocol.main(["--backend", "cpu", "--quick", "--cadence", "k2", "--out", str(there)]) == 1
    journal = there / "cache" / "protocol" / "k2-quick-tls-fused-seed0"
    rows = [row for f in journal.glob("*.npz") for row in store.load(f)[0]["rows"]]
    assert len(rows) == 3 and all(row["cached"] for row in rows)  # CPU TLS carried, not rerun


@pytest.mark.parametrize("argv", [["--jobs", "0"], ["--calibration", "0"], ["--test-nulls", "0"],
                                  ["--reference-subset", "-1"], ["--max-seconds", "0"],
                                  ["--threads", "0"], ["--cadence", "kepler"]])
def test_bad_arguments(argv, tmp_path):
    with pytest.raises(SystemExit) as exc:
        protocol.main([*argv, "--out", str(tmp_path)])
    assert exc.value.code == 2


class Approximate(CPUBackend):
    name = "test-approximate"
    exact = False


@pytest.mark.parametrize("argv, message", [
    (["--backend", "nope"], "unknown backend"),
    (["--backend", UnavailableBackend.name], "not on this machine"),
    (["--backend", "cpu", "--reference-backend", Approximate.name], "must be exact"),
])
def test_unusable_backends(argv, message, tmp_path, capsys):
    with registered(UnavailableBackend, Approximate):
        assert protocol.main([*argv, "--quick", "--out", str(tmp_path)]) == 2
        assert protocol.resolve(protocol.parse_args(["--backend", Approximate.name])) == (
            Approximate.name, resolve("auto"))  # an approximate backend's reference: auto's exact choice
    assert message in capsys.readouterr().err


def test_a_journal_of_other_items_is_refused(tmp_path, capsys):
    journal = tmp_path / "cache" / "protocol" / "k2-quick-cpu-seed0"
    journal.mkdir(parents=True)
    (journal / "_run.json").write_text(json.dumps({"version": 0}))
    argv = ["--backend", "cpu", "--quick", "--cadence", "k2", "--out", str(tmp_path)]
    assert protocol.main(argv) == 2
    assert "use another --out" in capsys.readouterr().err


# ---------------------------------------------------------------- scripts/gpu_protocol.sh

STUB = """#!/usr/bin/env bash
# stands in for python3: logs its arguments, fakes the protocol's outputs, exits as told
echo "$*" >> "$STUB_LOG"
args=("$@")
for ((i = 0; i < $#; i++)); do [[ ${args[i]} == --out ]] && out=${args[i+1]}; done
if [[ $2 == validation.protocol ]]; then
    mkdir -p "$out/figures" "$out/cache/protocol"
    touch "$out/protocol_pruned.md" "$out/protocol_pruned.json" "$out/protocol_pruned_summary.csv" \
        "$out/figures/protocol_pruned_recovery_vs_snr.png" "$out/cache/protocol/journal.npz"
    exit "${STUB_RC:-0}"
fi
"""


def run_script(tmp_path, **env):
    stub = tmp_path / "python"
    stub.write_text(STUB)
    stub.chmod(0o755)
    dest = tmp_path / "dest"
    env = {**os.environ, "PYTHON": str(stub), "STUB_LOG": str(tmp_path / "calls"), "OUT": str(dest),
           "WORK": str(tmp_path / "work"), "TLS_PACK": str(tmp_path / "none.npz"), **env}
    done = subprocess.run(["bash", str(ROOT / "scripts" / "gpu_protocol.sh")], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    return done.returncode, (tmp_path / "calls").read_text().splitlines(), dest


def test_gpu_protocol_runs_resumes_and_packs_its_work(tmp_path):
    rc, calls, dest = run_script(tmp_path, STUB_RC="4", PROTOCOL_S="300", JOBS="12")
    assert rc == 4 and len(calls) == 1
    assert calls[0] == ("-m validation.protocol --backend pruned --cadence all --calibration 1000 "
                        "--injections 1000 --test-nulls 1000 --reference-subset 100 --jobs 12 "
                        f"--threads 1 --max-seconds 300 --out {tmp_path / 'work'}")
    assert {p.name for p in dest.iterdir()} == {
        "protocol.tar.gz", "protocol.log", "protocol_pruned.md", "protocol_pruned.json",
        "protocol_pruned_summary.csv", "protocol_pruned_recovery_vs_snr.png"}
    assert "protocol: exit 4" in (dest / "protocol.log").read_text()

    archive, pack = tmp_path / "last.tar.gz", tmp_path / "pack.npz"
    shutil.copy(dest / "protocol.tar.gz", archive)
    pack.touch()
    shutil.rmtree(tmp_path / "work")
    (tmp_path / "calls").unlink()
    rc, calls, dest = run_script(tmp_path, RESUME_FROM=str(archive), TLS_PACK=str(pack))
    assert rc == 0 and calls[0] == f"-m validation.tlscache unpack {pack} --out {tmp_path / 'work'}"
    assert (tmp_path / "work" / "cache" / "protocol" / "journal.npz").exists()
    with tarfile.open(dest / "protocol.tar.gz") as tar:
        assert "./cache/protocol/journal.npz" in tar.getnames()
    assert "resumed from" in (dest / "protocol.log").read_text()


def test_gpu_protocol_refuses_an_unreadable_archive(tmp_path):
    (tmp_path / "calls").touch()
    rc, calls, dest = run_script(tmp_path, RESUME_FROM=str(tmp_path / "missing.tar.gz"))
    assert rc == 2 and calls == []
    assert "cannot unpack" in (dest / "protocol.log").read_text()


def test_a_peer_runs_in_the_protocol_and_its_failures_are_recorded(tmp_path, monkeypatch):
    """A peer is the side under test like a backend (in its own process), checked
    against an exact reference (auto's); a failing search is recorded per item."""
    from backends import peers

    peers.register_peer("peer:fake-raises", "tests.peer_fakes:raises")
    try:
        status = protocol.main(["--backend", "peer:fake-raises", "--cadence", "ffi10min", "--quick",
                                "--out", str(tmp_path)])
    finally:
        peers.unregister_peer("peer:fake-raises")
    assert status == 1
    table = pd.read_csv(tmp_path / "protocol_peer-fake-raises_ffi10min_quick.csv")
    assert len(table) == 12 and table["backend_error"].str.startswith("failed: RuntimeError").all()
    assert table["reference_error"].isna().all()
    manifest = json.loads((tmp_path / "protocol_peer-fake-raises_ffi10min_quick.json").read_text())
    assert manifest["reference"]["beyond"] == resolve("auto")
