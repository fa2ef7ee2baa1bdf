"""Child processes (validation's ``--jobs`` workers, the peers' worker
processes): one that ends when its parent does, even when the parent is
killed with SIGKILL (Linux's PR_SET_PDEATHSIG, and a watchdog thread that
notices the parent is gone, elsewhere or when the parent ended before the
prctl call); and how one ended, in words."""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
import time

PR_SET_PDEATHSIG = 1  # linux/prctl.h
WATCH_SECONDS = 0.5
REAP_SECONDS = 2.0  # for a dead child's exit status


def serve_parent(parent_pid: int) -> None:
    """In a child process: Ctrl-C is the parent's to handle, and the process
    dies with its parent."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_parent(parent_pid)


def die_with_parent(parent_pid: int) -> None:
    """End this process when process ``parent_pid``, its parent, ends."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    # elsewhere, and if the parent ended before prctl: the parent pid changes to a reaper's
    threading.Thread(target=_watch, args=(parent_pid,), name="parent-watchdog", daemon=True).start()


def _watch(parent_pid):
    while os.getppid() == parent_pid:
        time.sleep(WATCH_SECONDS)
    os._exit(1)


def ending(process) -> str | None:
    """How a ``multiprocessing`` process ended ("killed by SIGSEGV", "exited
    with status 3"), None while it runs."""
    code = process.exitcode
    if code is None:
        return None
    if code < 0:
        return f"killed by {signal.Signals(-code).name}"
    return f"exited with status {code}"
