"""NVIDIA's Multi-Process Service (MPS) for several workers on one GPU.

Worker processes that share a GPU each have a CUDA context, and the contexts
take turns on the GPU. Four survey workers on an H200 reached 331 K2-like
curves/s that way. Under MPS the same four shared one context and reached
391.7/s, the rate of one process's packed search
(reports/gpu/survey_reads_2026-12-03_H200, call 6). MPS is a user-space daemon
(``nvidia-cuda-mps-control``). It changes none of the GPU's settings, and its
clients find it through ``CUDA_MPS_PIPE_DIRECTORY``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from unittest import mock

DEFAULT_PIPE_DIRECTORY = "/tmp/nvidia-mps"  # the daemon's and its clients' default
CONTROL = "nvidia-cuda-mps-control"
QUIT_SECONDS = 10  # for the daemon to go after "quit", before its directory is removed


def pipe_directory():
    """The pipe directory of the MPS daemon this process's CUDA clients would
    join (``CUDA_MPS_PIPE_DIRECTORY``, else the default), or None if none runs there."""
    directory = os.environ.get("CUDA_MPS_PIPE_DIRECTORY", DEFAULT_PIPE_DIRECTORY)
    return directory if (Path(directory) / "control").exists() else None


@contextlib.contextmanager
def daemon():
    """An MPS daemon of our own for the duration, in a private pipe directory
    that this process's environment names (so the processes it starts join
    it); quit afterwards. RuntimeError without ``nvidia-cuda-mps-control`` or
    where it does not start."""
    control = shutil.which(CONTROL)
    if control is None:
        raise RuntimeError(f"{CONTROL} is not on PATH: NVIDIA's MPS comes with the driver's utilities")
    with tempfile.TemporaryDirectory(prefix="mps-") as root:
        env = {"CUDA_MPS_PIPE_DIRECTORY": f"{root}/pipe", "CUDA_MPS_LOG_DIRECTORY": f"{root}/log"}
        for directory in env.values():
            os.mkdir(directory)
        start = subprocess.run([control, "-d"], env={**os.environ, **env}, capture_output=True, text=True)
        if start.returncode != 0:
            raise RuntimeError(f"{CONTROL} -d failed ({start.returncode}): {start.stderr.strip()}")
        try:
            with mock.patch.dict(os.environ, env):
                yield env["CUDA_MPS_PIPE_DIRECTORY"]
        finally:
            subprocess.run([control], input="quit\n", env={**os.environ, **env}, capture_output=True, text=True)
            deadline = time.monotonic() + QUIT_SECONDS
            while (Path(env["CUDA_MPS_PIPE_DIRECTORY"]) / "control").exists() and time.monotonic() < deadline:
                time.sleep(0.1)
