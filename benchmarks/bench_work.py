"""Work of the exact scans that skip work, per search, next to their timings,
with the fraction of brute force's multiply-adds spent: ``cpu``'s and
``pruned``'s cascade (``backends.pruning.COUNTERS``: shifts visited, passing
the depth filter, surviving each bound, exact dot products), deterministic for
a given input, so a change in them is a change in the algorithm, not noise (CI
compares them exactly); ``tensor``'s screen (``tensor.WORK``: tiles past its
gate, shifts kept, re-checked, their multiply-adds), whose kept shifts vary a
little with the order in which its warps raise a period's lower gain."""

from __future__ import annotations

from backends.implementations import tensor
from backends.pruning import COUNTERS, work_summary
from benchmarks.cases import NDATA, NPERIODS, case, outcome, reported, runnable_backend

PRUNED = ["cpu", "pruned"]  # the backends that run the cascade


def searched(names, counters) -> dict:
    """One search per (backend, case), in one process: its work (``counters``)
    or the exception to report."""
    def work(name, ndata, nperiods):
        backend = runnable_backend(name, ndata, nperiods)
        c = case(ndata, nperiods)
        backend.work.clear()  # the thread's kept instance may have searched before
        backend.search(c.plan, c.periods)
        return work_summary(backend.work, counters)

    return {(name, ndata, nperiods): outcome(lambda: work(name, ndata, nperiods))
            for name in names for ndata in NDATA for nperiods in NPERIODS}


class Work:
    params = (PRUNED, NDATA, NPERIODS)
    param_names = ["backend", "ndata", "nperiods"]
    counters = COUNTERS

    def setup_cache(self):
        return searched(PRUNED, COUNTERS)

    def setup(self, found, name, ndata, nperiods):
        self.work = reported(found[name, ndata, nperiods])


class TensorWork:
    params = (["tensor"], NDATA, NPERIODS)
    param_names = ["backend", "ndata", "nperiods"]
    counters = tensor.WORK

    def setup_cache(self):
        return searched(["tensor"], tensor.WORK)

    setup = Work.setup


def _track(counter):
    def track(self, found, name, ndata, nperiods):
        return self.work[counter]

    track.__name__ = f"track_{counter}"
    track.unit = "fraction" if counter == "fraction_of_brute_force" else "count"
    return track


for _bench in (Work, TensorWork):
    for _counter in (*_bench.counters, "fraction_of_brute_force"):
        setattr(_bench, f"track_{_counter}", _track(_counter))
