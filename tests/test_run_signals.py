"""``python -m validation.recover`` as a user runs it, in its own session (a
terminal's Ctrl-C reaches every process of it), sent SIGINT or SIGKILL."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc (Linux)")
REPO = Path(__file__).resolve().parents[1]
SECONDS = 10  # "within seconds", with room for a loaded CI core


def session(sid):
    """pid -> (parent pid, command line) of the live (not zombie) processes of session ``sid``."""
    found = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            command = (stat.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:  # ended meanwhile
            continue
        if int(fields[3]) == sid and fields[0] != "Z":
            found[int(stat.parent.name)] = (int(fields[1]), command)
    return found


def wait_for(condition, seconds):
    end = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > end:
            return False
        time.sleep(0.05)
    return True


@pytest.fixture
def recover(tmp_path, small_plan):
    """Start recover (cpu backend) in a new session; kill what is left of it afterwards.
    The cpu backend is compiled first, here, into numba's on-disk cache: a signal
    cannot interrupt a compilation, and a fresh checkout has none cached."""
    import backends

    plan, periods = small_plan
    backends.get_backend("cpu").search(plan, periods[:4])
    started = []

    def start(*args):
        log = open(tmp_path / "stderr.txt", "w")
        process = subprocess.Popen(
            [sys.executable, "-m", "validation.recover", "--backend", "cpu", "--out", str(tmp_path),
             *args], cwd=REPO, start_new_session=True, stdout=subprocess.DEVNULL, stderr=log,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (
                str(REPO), os.environ.get("PYTHONPATH"))))})  # keep a --target install (GPU machine)
        started.append(process)
        assert wait_for(lambda: "| 0/" in stderr(), 120), stderr()  # the progress bar: set up
        return process

    def stderr():
        return (tmp_path / "stderr.txt").read_text()

    start.stderr = stderr
    start.journal = lambda: sorted(tmp_path.glob("cache/runs/*/*.npz"))
    yield start
    for process in started:
        for pid in session(process.pid):
            os.kill(pid, signal.SIGKILL)
        process.wait()


def test_ctrl_c_in_numba_code_stops_at_once_and_journals_nothing(recover):
    """Both searches in this process (--threads 1): the Ctrl-C lands in numba code,
    which once made it a backend failure, journaled, and the run went on."""
    run = recover("--suite", "k2", "--limit", "1", "--threads", "1")
    time.sleep(2.5)  # past the warm-up: the backend's 6-s search of K2-3
    os.killpg(run.pid, signal.SIGINT)
    assert run.wait(SECONDS) == 130, recover.stderr()
    assert "interrupted: 0/1 cases saved" in recover.stderr() and recover.journal() == []


def test_a_second_ctrl_c_ends_the_run_at_once(recover):
    """With TLS's worker pools (--threads 2), two Ctrl-C in a row: the run ends
    with status 130 as a shell reports it, and no process of it is left."""
    run = recover("--suite", "quick", "--limit", "6", "--threads", "2")  # ~2 s a case
    time.sleep(3.0)
    os.killpg(run.pid, signal.SIGINT)
    time.sleep(0.05)
    os.killpg(run.pid, signal.SIGINT)
    status = run.wait(SECONDS)
    # 130: exited; -SIGINT: the second one came while Python shut down (a shell shows 130 too)
    assert status in (130, -signal.SIGINT), recover.stderr()
    assert wait_for(lambda: not session(run.pid), SECONDS), session(run.pid)


def test_workers_die_with_their_parent_killed(recover):
    run = recover("--suite", "quick", "--limit", "6", "--jobs", "2")
    assert wait_for(lambda: recover.journal(), 120), recover.stderr()  # the workers are at work
    workers = [pid for pid, (parent, command) in session(run.pid).items()
               if parent == run.pid and "spawn_main" in command]
    assert len(workers) == 2
    os.kill(run.pid, signal.SIGKILL)
    assert run.wait(SECONDS) == -signal.SIGKILL
    assert wait_for(lambda: not session(run.pid), SECONDS), session(run.pid)
