"""``validation.mps``: which MPS daemon a CUDA client would join, and one of our own (a fake control program)."""

import os
import stat

import pytest

from validation import mps

FAKE_CONTROL = """#!/usr/bin/env bash
echo "$* pipe=$CUDA_MPS_PIPE_DIRECTORY log=$CUDA_MPS_LOG_DIRECTORY" >> "{log}"
[[ "$1" == -d ]] && {{ {start}; touch "$CUDA_MPS_PIPE_DIRECTORY/control"; exit 0; }}
read -r command; echo "stdin $command" >> "{log}"
[[ "$command" == quit ]] && rm "$CUDA_MPS_PIPE_DIRECTORY/control"
"""


@pytest.fixture
def control(tmp_path, monkeypatch):
    """Puts a fake nvidia-cuda-mps-control on PATH; returns (its log, a setter of its start command)."""
    log = tmp_path / "calls.log"

    def make(start="true"):
        program = tmp_path / "bin" / mps.CONTROL
        program.parent.mkdir(exist_ok=True)
        program.write_text(FAKE_CONTROL.format(log=log, start=start))
        program.chmod(program.stat().st_mode | stat.S_IEXEC)

    make()
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("CUDA_MPS_PIPE_DIRECTORY", raising=False)
    return log, make


def test_the_pipe_directory_is_that_of_a_running_daemon(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDA_MPS_PIPE_DIRECTORY", str(tmp_path))
    assert mps.pipe_directory() is None  # no daemon's control pipe there
    (tmp_path / "control").touch()
    assert mps.pipe_directory() == str(tmp_path)


def test_a_daemon_of_our_own_is_started_named_in_the_environment_and_quit(control):
    log, _ = control
    with mps.daemon() as pipe:
        assert os.environ["CUDA_MPS_PIPE_DIRECTORY"] == pipe and mps.pipe_directory() == pipe
        assert os.environ["CUDA_MPS_LOG_DIRECTORY"].endswith("/log")
    assert "CUDA_MPS_PIPE_DIRECTORY" not in os.environ and "CUDA_MPS_LOG_DIRECTORY" not in os.environ
    assert not os.path.exists(pipe)  # its directory removed
    started, quit_, command = log.read_text().splitlines()
    assert started.startswith(f"-d pipe={pipe} log=") and quit_.startswith(f" pipe={pipe}") and command == "stdin quit"


def test_a_daemon_needs_its_control_program(control, monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(RuntimeError, match="nvidia-cuda-mps-control is not on PATH"):
        with mps.daemon():
            pass


def test_a_daemon_that_does_not_start_is_an_error_naming_why(control):
    _, make = control
    make(start="echo 'An instance of this daemon is already running' >&2; exit 1")
    with pytest.raises(RuntimeError, match="-d failed .1.: An instance of this daemon is already running"):
        with mps.daemon():
            pass
    assert "CUDA_MPS_PIPE_DIRECTORY" not in os.environ
