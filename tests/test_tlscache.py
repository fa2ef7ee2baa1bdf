"""validation.tlscache (fill, pack, unpack the CPU TLS cache) and the host logic
of scripts/gpu_suites.sh (with a stub interpreter), on tiny stub inputs."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from validation import cases, recover, runs, store, tlscache

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).parent))
from test_validation import StubSearch, fake_input  # noqa: E402


def record(sde):
    scalars = dict(period=5.0, t0=1.0, duration=0.2, depth_ppm=1e3, sde=sde, snr=9.0, fap=1e-4,
                   runtime_s=2.0, error=None, name="tls-fused")
    return scalars, dict(periods=np.arange(4.0, dtype=np.float32), power=np.ones(4, np.float32))


def test_pack_keeps_scalars_of_all_and_arrays_of_the_examples(tmp_path):
    src = tmp_path / "src"
    for key, sde in (("aa", 10.0), ("bb", 20.0), ("cc", 30.0)):
        store.save(src / f"{key}.npz", *record(sde))
    (src / "broken.npz").write_bytes(b"garbage")  # unreadable records are left out
    assert tlscache.pack(src, tmp_path / "p.npz", keep_arrays={"bb"}) == 3

    dst = tmp_path / "dst"
    store.save(dst / "cc.npz", *record(99.0))  # already there: kept as it is
    assert tlscache.unpack(tmp_path / "p.npz", dst) == 2
    assert tlscache.unpack(tmp_path / "p.npz", dst) == 0
    bb, aa, cc = (store.load(dst / f"{k}.npz") for k in ("bb", "aa", "cc"))
    assert bb[0] == record(20.0)[0] and list(bb[1]) == ["periods", "power"]
    np.testing.assert_array_equal(bb[1]["power"], record(20.0)[1]["power"])
    assert aa[0]["sde"] == 10.0 and aa[1] == {}
    assert cc[0]["sde"] == 99.0


def test_unpack_refuses_what_is_not_a_pack(tmp_path, capsys):
    store.save(tmp_path / "record.npz", *record(10.0))
    with pytest.raises(ValueError, match="not a CPU TLS cache pack"):
        tlscache.unpack(tmp_path / "record.npz", tmp_path / "dst")
    assert tlscache.main(["unpack", str(tmp_path / "missing.npz"), "--out", str(tmp_path)]) == 2
    assert "not a CPU TLS cache pack" in capsys.readouterr().err


def test_searches_without_a_backend_are_cpu_tls_twice(monkeypatch, tmp_path):
    warmed = []
    monkeypatch.setattr(runs, "warm_up", lambda *s: warmed.extend(s))
    sides = recover.searches(None, tmp_path, 1)
    assert sides["backend"] is sides["cpu"] and isinstance(sides["cpu"], runs.TLSCache)
    assert len(warmed) == 1  # the one CPU TLS search, warmed once


@pytest.fixture
def stub_suite(monkeypatch):
    small = dict(ndata=300, baseline=30.0, cadence_min=30.0)
    suite = [cases.Case("one", "synthetic", small, {"case": "one"}),
             cases.Case("two", "synthetic", dict(small, planets=2), {"case": "two"}),
             cases.Case("real", "real", {"name": "K2-140_K2_C10_juliet"}, {"case": "real"})]
    monkeypatch.setattr(cases, "suite", lambda name, seed=0: suite)
    monkeypatch.setattr(cases, "materialize", fake_input)
    monkeypatch.setattr(runs, "warm_up", lambda *s: None)
    stub = StubSearch()
    monkeypatch.setattr(runs, "tls_search", lambda t, y, dy, options, use_threads=1, runner="":
                        stub(t, y, dy, options))
    return stub


def test_fill_computes_each_search_once_and_resumes(stub_suite, tmp_path, capsys):
    assert tlscache.main(["fill", "--suite", "quick", "--out", str(tmp_path)]) == 0
    assert stub_suite.calls == 4  # one, two (+ masked re-search), real
    assert len(list(tlscache.cache_dir(tmp_path).glob("*.npz"))) == 4
    assert "3 cases, 4 searches" in capsys.readouterr().out
    assert tlscache.main(["fill", "--suite", "quick", "--out", str(tmp_path)]) == 0
    assert stub_suite.calls == 4

    pack = tmp_path / "pack.npz"
    assert tlscache.main(["pack", "--suite", "quick", "--out", str(tmp_path), "--to", str(pack)]) == 0
    packed = store.load(pack)
    assert len(packed[0]["records"]) == 4
    assert {name.split(tlscache.SEP)[1] for name in packed[1]} == {"periods", "power"}
    assert len({name.split(tlscache.SEP)[0] for name in packed[1]}) == 1  # the real case only


def test_fill_starts_with_the_biggest_cases():
    syn = {(c.params["ndata"], c.params["baseline"]): c for c in cases.suite("synthetic")}
    real = {c.id: c for c in cases.suite("all") if c.kind == "real"}
    cost = tlscache.expected_cost
    assert cost(syn[100_000, 150.0]) > cost(real["TOI-540_TESS_S04-S05"]) > cost(syn[500, 27.0])
    assert cost(real["TOI-540_TESS_S04-S05"]) > cost(real["K2-140_K2_C10_juliet"])


def test_fill_interrupted_keeps_finished_cases(stub_suite, tmp_path, capsys):
    stub_suite.interrupt_after = 1  # the real case (biggest) goes first, then "two" is cut
    assert tlscache.main(["fill", "--out", str(tmp_path)]) == 130
    assert "resume" in capsys.readouterr().err
    assert len(list(tlscache.cache_dir(tmp_path).glob("*.npz"))) == 1
    with pytest.raises(SystemExit):
        tlscache.main(["fill", "--jobs", "0"])


# ---------------------------------------------------------------- scripts/gpu_suites.sh
STUB = """#!/usr/bin/env bash
# stands in for python3: logs its arguments, fakes the outputs, exits as told
echo "$*" >> "$STUB_LOG"
args=("$@")
for ((i = 0; i < $#; i++)); do
    case ${args[i]} in --backend) backend=${args[i+1]} ;; --out) out=${args[i+1]} ;; esac
done
case $2 in
    validation.recover)
        mkdir -p "$out/figures"
        touch "$out/recover_quick_$backend.csv" "$out/figures/recover_quick_${backend}_example.png"
        rc=STUB_RC_$backend; exit "${!rc:-0}" ;;
    validation.tlscache) [[ $3 == pack ]] && touch "${args[-1]}"; exit 0 ;;
esac
"""


def run_suites(tmp_path, **env):
    stub = tmp_path / "python"
    stub.write_text(STUB)
    stub.chmod(0o755)
    dest = tmp_path / "dest"
    env = dict(os.environ, PYTHON=str(stub), STUB_LOG=str(tmp_path / "calls"), SUITE="quick",
               WORK=str(tmp_path / "work"), RECOVER_BACKENDS="basic numba", **env)
    done = subprocess.run(["bash", str(ROOT / "scripts" / "gpu_suites.sh"), str(dest)], env=env,
                          capture_output=True, text=True, cwd=tmp_path, timeout=60)
    return done.returncode, (tmp_path / "calls").read_text().splitlines(), dest


def test_gpu_suites_runs_every_backend_and_collects_reports(tmp_path):
    pack = tmp_path / "pack.npz"
    pack.touch()
    rc, calls, dest = run_suites(tmp_path, TLS_PACK=str(pack), STUB_RC_numba="1")
    assert rc == 0  # a failed verdict is a result (in the report), not a broken run
    assert calls[0] == f"-m validation.tlscache unpack {pack} --out {tmp_path / 'work'}"
    assert calls[1].startswith("-m validation.tlscache fill --suite quick --jobs ")
    recovers = sorted(c for c in calls if "validation.recover" in c)
    assert recovers == [f"-m validation.recover --suite quick --backend {b} --jobs 3 --threads 1 "
                        f"--out {tmp_path / 'work'}" for b in ("basic", "numba")]
    assert calls[-1].endswith(f"pack --suite quick --out {tmp_path / 'work'} "
                              f"--to {dest / 'tls_pack_quick.npz'}")
    assert {p.name for p in dest.iterdir()} >= {"recover_quick_basic.csv", "recover_quick_numba.csv",
                                                 "tls_pack_quick.npz", "suites.txt", "fill.log"}
    assert (dest / "figures" / "recover_quick_numba_example.png").exists()
    assert "recover numba: exit 1" in (dest / "suites.txt").read_text()


def test_gpu_suites_without_pack_or_fill_and_cut_short(tmp_path):
    rc, calls, dest = run_suites(tmp_path, TLS_PACK=str(tmp_path / "none.npz"), FILL="0",
                                 STUB_RC_basic="130")
    assert rc == 1  # a backend cut short: run the same call again to resume
    assert not any("unpack" in c or "fill" in c for c in calls)
    text = (dest / "suites.txt").read_text()
    assert "no CPU TLS pack" in text and "recover basic: exit 130" in text


def test_cache_key_ignores_last_bit_differences_between_machines():
    t = np.linspace(1400.0, 1427.0, 1000)
    y = 1.0 + np.random.default_rng(1).normal(0.0, 1e-3, t.size)
    key = runs.cache_key(t, y, None, {})
    assert runs.cache_key(t, np.nextafter(y, 2.0), None, {}) == key
    assert runs.cache_key(t, y + 1e-6, None, {}) != key
    assert runs.cache_key(t, y, None, {"period_max": 5}) != key


def test_gpu_suites_leaves_the_backends_for_the_next_call_when_time_is_up(tmp_path):
    rc, calls, dest = run_suites(tmp_path, TLS_PACK=str(tmp_path / "none.npz"), SUITES_S="30")
    assert rc == 1 and not any("validation.recover" in c for c in calls)
    assert "no time left for the backends" in (dest / "suites.txt").read_text()
