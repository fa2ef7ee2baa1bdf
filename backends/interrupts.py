"""Ctrl-C seen through numba: a KeyboardInterrupt raised while numba-compiled
code runs comes out as ``SystemError: CPUDispatcher(...) returned a result
with an exception set``, with the KeyboardInterrupt at the end of its chain.
Code that turns exceptions into per-item failures calls ``reraise_interrupt``
first, so that an interrupt stops the run instead of being recorded as a
backend failure; ``last_line`` is what such a failure records."""

from __future__ import annotations


def is_interrupt(exc: BaseException) -> bool:
    """Whether ``exc`` is, or was raised by, a KeyboardInterrupt (its chain of
    causes and contexts holds one)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


def reraise_interrupt(exc: BaseException) -> None:
    """Raise KeyboardInterrupt (from ``exc``) when ``exc`` is an interrupt in disguise."""
    if is_interrupt(exc):
        raise KeyboardInterrupt from exc


def last_line(exc: BaseException) -> str:
    """What a failure says in one line: its traceback's last ("ValueError: ...")."""
    import traceback

    return traceback.format_exception_only(type(exc), exc)[-1].strip()
