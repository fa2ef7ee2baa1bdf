"""Device time per stage from CUDA events, so a backend can queue launch after
launch without waiting for the device between them (a host clock would need
a synchronisation before every read)."""

from __future__ import annotations

import contextlib


def mark(stream=None):
    """A CUDA event recorded now on ``stream`` (None: the default stream; call
    in a context)."""
    import pycuda.driver as cuda

    event = cuda.Event()
    event.record(stream)
    return event


class EventClock:
    """Stages marked by events between launches on one stream; ``settle``
    waits for the device to pass them and adds each stage's seconds to
    ``timings`` (a StageTimes), nested stages included (dotted names, as the
    backends use); ``drop`` forgets them (work abandoned after an error)."""

    def __init__(self, timings, stream=None):
        self.timings = timings
        self.stream = stream
        self.spans = []

    @contextlib.contextmanager
    def stage(self, name):
        start = mark(self.stream)
        yield
        self.spans.append((name, start, mark(self.stream)))

    def settle(self):
        for name, start, end in self.spans:
            end.synchronize()
            self.timings[name] += end.time_since(start) / 1e3
        self.drop()

    def drop(self):
        self.spans.clear()
