"""The process a peer runs in: one long-lived worker per peer, so that its
imports, CUDA context and compiled kernels are paid for once, and nothing it
does (a context made current, a segfault, a hang) reaches the caller or
another peer.

The caller (``PeerProcess.call``) starts the worker when it has none (and
waits until it is ready, which is not timed), sends one request and waits at
most ``timeout`` seconds. A peer that raises, dies or runs past the timeout gives
a failure (``failed``, ``crashed``, ``timeout``) instead of a result, and its
process is replaced on the next call: after a failed call too, since a CUDA
error can leave a context unusable. The worker ignores Ctrl-C (its caller
handles it and ends the worker), dies with its caller, and imports the peer
only on its first request, so an import error is that request's failure.
"""

from __future__ import annotations

import importlib
import multiprocessing
import os
import time

from backends.child_processes import REAP_SECONDS, ending, serve_parent
from backends.interrupts import last_line

STARTUP_SECONDS = 120.0  # for a new worker to import the workbench and say it is ready
READY = "ready"


def load(entry: str):
    """The peer object of an entry: a module path, or ``"module:attribute"``."""
    module, _, attribute = entry.partition(":")
    found = importlib.import_module(module)
    return getattr(found, attribute) if attribute else found


def serve(conn, entry: str, parent_pid: int) -> None:
    """The worker's loop: each request is ``peer.run(**request)``'s keywords;
    each reply (status, result or why, seconds the peer took)."""
    serve_parent(parent_pid)
    conn.send(READY)
    peer = None
    while True:
        try:
            request = conn.recv()
        except EOFError:  # the caller closed the pipe: done
            return
        start = time.perf_counter()
        try:
            peer = peer or load(entry)
            reply = ("ok", peer.run(**request))
        except Exception as exc:  # the peer's failure, reported to the caller
            reply = ("failed", last_line(exc))
        conn.send((*reply, time.perf_counter() - start))


class PeerProcess:
    """The caller's end of one peer's worker process."""

    def __init__(self, name: str, entry: str):
        self.name, self.entry = name, entry
        self.process = self.conn = None

    def call(self, request: dict, timeout: float):
        """(status, result or why, seconds): ``("ok", result, s)`` or
        ``("failed" | "crashed" | "timeout", why, s)``."""
        start = time.perf_counter()
        try:
            if self.process is None:
                self._start()
                start = time.perf_counter()
            self.conn.send(request)
            if not self.conn.poll(timeout):
                self.stop()
                return "timeout", f"no result after {timeout:g} s (peer process killed)", timeout
            status, value, seconds = self.conn.recv()
        except (EOFError, OSError):  # the worker died (or never started) before answering
            self.process.join(REAP_SECONDS)
            why = f"peer process {ending(self.process) or 'stopped answering'}"
            self.stop()
            return "crashed", why, time.perf_counter() - start
        except BaseException:  # e.g. Ctrl-C: its answer must not reach the next call
            self.stop()
            raise
        if status != "ok":
            self.stop()
        return status, value, seconds

    def _start(self):
        ctx = multiprocessing.get_context("spawn")  # no inherited CUDA context or threads
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=serve, args=(child, self.entry, os.getpid()),
                                   name=f"peer-{self.name}", daemon=True)
        self.process.start()
        child.close()  # so that the worker's death reads as the end of the pipe here
        if not self.conn.poll(STARTUP_SECONDS) or self.conn.recv() != READY:
            raise EOFError(f"the worker did not start within {STARTUP_SECONDS:g} s")

    def stop(self):
        """End the worker (at once) and forget it; the next call starts another."""
        if self.process is not None:
            self.process.kill()
            self.process.join(REAP_SECONDS)
            self.conn.close()
        self.process = self.conn = None
