"""Stand-in peers for the tests, each run in a peer worker process like a real
one: one that finds a fixed planet, one that crashes (SIGSEGV), one that exits,
one that hangs, one that raises and one that returns nonsense; ``mixed``
behaves as one of them per light curve (by its number of points)."""

import math
import os
import signal
import time

FOUND = dict(period=4.3, t0=1.1, duration=0.12, depth_ppm=2000.0, sde=25.0, snr=30.0)


class Fake:
    DEVICE = "cpu"
    PACKAGE = None

    def __init__(self, behaviour, why=None):
        self.behaviour, self.why = behaviour, why

    def missing(self):
        return self.why

    def run(self, t, y, dy, periods, options):
        behaviour = BEHAVIOURS[t.size % len(BEHAVIOURS)] if self.behaviour == "mixed" else self.behaviour
        if behaviour == "segfault":
            os.kill(os.getpid(), signal.SIGSEGV)
        if behaviour == "exit":
            os._exit(3)
        if behaviour == "hang":
            time.sleep(3600)
        if behaviour == "raises":
            raise RuntimeError("cuFuncSetBlockShape failed: invalid resource handle")
        if behaviour == "nonsense":
            return dict(FOUND, period=float(min(periods)), sde=math.nan)
        return dict(FOUND, pid=os.getpid(), points=t.size)


BEHAVIOURS = ("fixed", "segfault", "exit", "hang", "raises", "nonsense")
fixed, segfault, exits, hang, raises, nonsense, mixed = (
    Fake(b) for b in ("fixed", "segfault", "exit", "hang", "raises", "nonsense", "mixed"))
unavailable = Fake("fixed", why="no FakeGPU here")
