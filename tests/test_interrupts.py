"""Ctrl-C is an interrupt wherever it lands (numba wraps it in a SystemError),
never a recorded failure; CPU TLS leaves no worker pool behind; children of a
validation run ignore Ctrl-C and die with their parent."""

import multiprocessing
import os
import signal
import sys

import pytest
from conftest import box_light_curve

import backends
from backends import interrupts
from backends.implementations.cpu import CPUBackend
from validation import processes, runs


def numba_interrupt():
    """What a Ctrl-C inside numba-compiled code raises (the dispatcher's SystemError)."""
    try:
        raise KeyboardInterrupt
    except KeyboardInterrupt as exc:
        raise SystemError("CPUDispatcher(<function search_periods>) returned a result with an "
                          "exception set") from exc


def test_an_interrupt_is_found_in_the_chain():
    with pytest.raises(SystemError) as wrapped:
        numba_interrupt()
    assert interrupts.is_interrupt(wrapped.value) and interrupts.is_interrupt(KeyboardInterrupt())
    assert not interrupts.is_interrupt(SystemError("a real one"))
    cycle = ValueError("a")
    cycle.__context__ = ValueError("b")
    cycle.__context__.__context__ = cycle
    assert not interrupts.is_interrupt(cycle)
    with pytest.raises(KeyboardInterrupt):
        interrupts.reraise_interrupt(wrapped.value)
    interrupts.reraise_interrupt(ValueError("not one"))  # nothing raised


def test_a_guarded_search_raises_an_interrupt_and_records_other_failures():
    with pytest.raises(KeyboardInterrupt):
        runs.guarded(numba_interrupt)()
    scalars, _ = runs.guarded(lambda: 1 / 0)()
    assert scalars["error"] == "ZeroDivisionError: division by zero"


def test_an_interrupted_batch_raises_instead_of_recording_errors(monkeypatch):
    monkeypatch.setattr(CPUBackend, "search", lambda self, plan, periods, progress=None: numba_interrupt())
    with pytest.raises(KeyboardInterrupt):
        backends.search_batch([box_light_curve(days=16.0)], backend="cpu", period_min=3.0,
                              period_max=6.0)
    with pytest.raises(SystemError) as wrapped:
        numba_interrupt()
    with pytest.raises(KeyboardInterrupt):
        backends.BatchError.of("lc", wrapped.value)


def test_ctrl_c_in_a_search_is_a_keyboard_interrupt(monkeypatch, small_lc):
    from transitleastsquares import transitleastsquares

    from backends import statistics

    monkeypatch.setattr(statistics, "running_median", lambda data, kernel: numba_interrupt())
    with pytest.raises(KeyboardInterrupt):  # in the statistics
        backends.search(*small_lc, backend="cpu")
    monkeypatch.setattr(CPUBackend, "search", lambda self, plan, periods, progress=None: numba_interrupt())
    with pytest.raises(KeyboardInterrupt):  # in the backend
        backends.search(*small_lc, backend="cpu")
    monkeypatch.setattr(transitleastsquares, "power", lambda self, **options: numba_interrupt())
    with pytest.raises(KeyboardInterrupt):  # in TLS's power(), which a search asking for TLS's log runs
        backends.search(*small_lc, backend="cpu", verbose=True)


def test_cpu_tls_leaves_no_worker_pool_behind():
    from transitleastsquares import shutdown_workers
    from transitleastsquares.backends import pool

    from backends.tls_power import power

    t, y, dy = box_light_curve(days=16.0)
    shutdown_workers()  # a pool an earlier test's TLS run kept (the peers' TLS default) is not ours
    before = set(multiprocessing.active_children())
    runs.tls_search(t, y, dy, {"period_min": 3.0, "period_max": 6.0}, use_threads=2)
    assert pool._Persistent.pool is None and set(multiprocessing.active_children()) <= before
    try:  # TLS's own default keeps its workers: what validation must not do
        power(t, y, dy, period_min=3.0, period_max=6.0, use_threads=2, persistent_pool=True)
        assert pool._Persistent.pool is not None
    finally:
        shutdown_workers()


def _child_state(queue):
    import ctypes

    pdeathsig = ctypes.c_int()
    ctypes.CDLL(None).prctl(2, ctypes.byref(pdeathsig))  # PR_GET_PDEATHSIG
    queue.put((signal.getsignal(signal.SIGINT) == signal.SIG_IGN, pdeathsig.value))


def _forked_child_state():
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_child_state, args=(queue,))
    child.start()
    state = queue.get(timeout=30)
    child.join()
    return state


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl is Linux's")
def test_children_forked_in_a_run_ignore_ctrl_c_and_die_with_it():
    with processes.interruptible():
        assert signal.getsignal(signal.SIGINT) is not signal.default_int_handler
        assert _forked_child_state() == (True, signal.SIGKILL)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # restored
    assert _forked_child_state() == (False, 0)  # outside a run: nothing changes


def test_the_watchdog_ends_a_child_whose_parent_is_gone():
    """The portable fallback of die_with_parent: a parent pid that is not ours."""
    ctx = multiprocessing.get_context("spawn")
    child = ctx.Process(target=_watch_a_stranger)
    child.start()
    child.join(timeout=30)
    assert child.exitcode == 1


def _watch_a_stranger():
    import time

    from backends.child_processes import die_with_parent

    die_with_parent(os.getppid() + 10**6)
    time.sleep(60)


def _frame_in(filename):
    """A frame of code whose file is ``filename``."""
    scope = {}
    exec(compile("import sys\ndef here():\n    return sys._getframe()\n", filename, "exec"), scope)
    return scope["here"]()


def test_a_ctrl_c_inside_numbas_compiler_callbacks_comes_again_outside_them(monkeypatch):
    """Raised in a ctypes callback from llvmlite, KeyboardInterrupt is swallowed and
    LLVM goes on broken (test_a_second_ctrl_c_ends_the_run_at_once saw SIGSEGV):
    there the handler sends the signal again a moment later, and raises elsewhere."""
    sent, timers = [], []

    class Timer:
        def __init__(self, seconds, call, args):
            timers.append(seconds)
            self.call, self.args = call, args

        def start(self):
            self.call(*self.args)

    monkeypatch.setattr(processes.threading, "Timer", Timer)
    monkeypatch.setattr(processes.os, "kill", lambda pid, signum: sent.append((pid, signum)))
    callback = _frame_in(os.path.join(os.sep, "site-packages", "llvmlite", "binding", "executionengine.py"))
    with processes.interruptible():
        processes._interrupt(signal.SIGINT, callback)  # no raise
        assert sent == [(os.getpid(), signal.SIGINT)] and timers == [processes.DEFER_SECONDS]
        assert signal.getsignal(signal.SIGINT) is processes._interrupt  # still the first Ctrl-C's
        with pytest.raises(KeyboardInterrupt):
            processes._interrupt(signal.SIGINT, _frame_in(os.path.join(os.sep, "work", "numba_user.py")))
        assert signal.getsignal(signal.SIGINT) is processes._kill_children_and_exit
    signal.signal(signal.SIGINT, signal.default_int_handler)
