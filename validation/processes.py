"""How the processes of a validation run end.

* Ctrl-C (``interruptible``): the first one raises KeyboardInterrupt in the
  parent (once out of numba's compiler callbacks, where it would be lost),
  which stops, keeps what is journaled and exits 130; a second one,
  while that is cleaned up, kills the children and ends the process at once,
  so it never hangs. Children forked meanwhile (transitleastsquares' worker
  pools) ignore Ctrl-C: their parent ends them, whereas a pool worker killed
  by Ctrl-C in the middle of a task leaves its pool waiting for it forever.
* Child processes (``--jobs`` workers, and the pools they fork) die with their
  parent, even when it is killed with SIGKILL (``follow_parent``,
  ``backends.child_processes``).
* A worker that dies is named with its signal (``WorkerDied``, ``deaths``).
* ``run_tasks`` runs a list of tasks here or in such workers, handing each
  result back as it finishes (to be journaled), within an optional deadline.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import threading
import time
from unittest import mock

from backends.child_processes import REAP_SECONDS, ending, serve_parent

THREAD_VARIABLES = ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
INTERRUPTED = 130  # the shell's status of a process ended by Ctrl-C

_children_follow = False  # children forked from here follow this process (``_after_fork``)


class WorkerDied(RuntimeError):
    """A ``--jobs`` worker process ended abruptly (a crash or a kill, not an exception)."""


class OutOfTime(RuntimeError):
    """A run's time budget ran out; the tasks finished before it are kept."""


def thread_limits(threads):
    """The environment that processes spawned meanwhile inherit: every thread pool
    (numba, OpenMP, BLAS) at ``threads``, so jobs x threads stays within the cores."""
    return mock.patch.dict(os.environ, dict.fromkeys(THREAD_VARIABLES, str(threads)))


def deaths(processes):
    """How worker processes ended, e.g. "pid 12 killed by SIGSEGV", for those that did."""
    ended = [f"pid {p.pid} {ending(p)}" for p in processes if p.exitcode is not None]
    return ", ".join(ended) or "none has ended yet"


def follow_parent(parent_pid: int) -> None:
    """In a child process: Ctrl-C is the parent's to handle, the process dies with
    its parent, and so do the children it forks."""
    global _children_follow

    serve_parent(parent_pid)
    _children_follow = True


def _after_fork():
    if _children_follow:
        follow_parent(os.getppid())


def _start_worker(parent_pid, setup, setup_args):
    follow_parent(parent_pid)
    if setup is not None:
        setup(*setup_args)


def run_tasks(tasks, work, done, jobs=1, threads=1, setup=None, setup_args=(), deadline=None):
    """``work(task)`` for every task, and here ``done(task, result)`` as each finishes.

    With ``jobs`` > 1 in that many spawned processes (they follow this one:
    ``follow_parent``; their thread pools at ``threads``), else here; either
    way ``setup(*setup_args)`` runs first where the tasks run (``work`` and
    ``setup`` module-level, for pickling). Past ``deadline`` (a
    ``time.monotonic()`` value) no task starts and, with workers, none is
    waited for: OutOfTime. A dead worker is WorkerDied. Workers are ended
    whenever the run stops early; what ``done`` received is all that is kept.
    """
    tasks = list(tasks)
    if not tasks:
        return
    if jobs <= 1:
        if setup is not None:
            setup(*setup_args)
        for task in tasks:
            if deadline is not None and time.monotonic() > deadline:
                raise OutOfTime("the time budget ran out")
            done(task, work(task))
        return
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures import TimeoutError as FuturesTimeout
    from concurrent.futures.process import BrokenProcessPool

    # spawn: workers must not inherit a GPU context or numba's threading state
    ctx = multiprocessing.get_context("spawn")
    with thread_limits(threads), ProcessPoolExecutor(
            max_workers=jobs, mp_context=ctx, initializer=_start_worker,
            initargs=(os.getpid(), setup, setup_args)) as pool:
        futures = {pool.submit(work, task): task for task in tasks}
        workers = list(pool._processes.values())
        timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
        try:
            for future in as_completed(futures, timeout=timeout):
                done(futures[future], future.result())
        except BaseException as exc:
            pool.shutdown(wait=False, cancel_futures=True)
            for process in workers:  # their unfinished tasks are redone on resume
                if process.is_alive():
                    process.terminate()
            if isinstance(exc, BrokenProcessPool):
                for process in workers:  # reaped, so that each says how it ended
                    process.join(REAP_SECONDS)
                raise WorkerDied(f"a worker process died ({deaths(workers)}); what finished is "
                                 "kept: run the same command again to resume") from exc
            if isinstance(exc, FuturesTimeout):
                raise OutOfTime("the time budget ran out") from None
            raise


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


def _kill_children_and_exit(signum, frame):
    for child in multiprocessing.active_children():
        child.kill()
    os._exit(INTERRUPTED)


DEFER_SECONDS = 0.01  # a Ctrl-C that lands in a callback from compiled code comes again this much later


def _in_llvm_callback(frame) -> bool:
    """Whether ``frame`` runs inside a callback from llvmlite (numba compiling):
    ctypes swallows an exception raised there ("Exception ignored on calling
    ctypes callback function") and LLVM goes on with what the callback did not
    return; the run then died with SIGSEGV, not 130."""
    while frame is not None:
        if "llvmlite" in frame.f_code.co_filename.split(os.sep):
            return True
        frame = frame.f_back
    return False


def _interrupt(signum, frame):
    if _in_llvm_callback(frame):
        threading.Timer(DEFER_SECONDS, os.kill, (os.getpid(), signum)).start()
        return
    signal.signal(signal.SIGINT, _kill_children_and_exit)
    raise KeyboardInterrupt


@contextlib.contextmanager
def interruptible():
    """Within (main thread only): the first Ctrl-C raises KeyboardInterrupt and
    from then on, also after the block, another one kills the children and
    exits with status 130; children forked meanwhile ignore Ctrl-C and die with
    this process."""
    global _children_follow

    previous, children_follow = signal.signal(signal.SIGINT, _interrupt), _children_follow
    _children_follow = True
    try:
        yield
    finally:
        if signal.getsignal(signal.SIGINT) is _interrupt:  # no Ctrl-C came
            signal.signal(signal.SIGINT, previous)
        _children_follow = children_follow
