"""Work of the pruned scans (``backends.pruning.COUNTERS``) per search, next to
their timings: shifts visited, passing the depth filter, surviving each bound,
exact dot products and the fraction of brute force's multiply-adds. The
counters are deterministic for a given input, so a change in them is a change
in the algorithm, not noise (CI compares them exactly)."""

from __future__ import annotations

from backends.pruning import COUNTERS, work_summary
from benchmarks.cases import NDATA, NPERIODS, case, outcome, reported, runnable_backend

PRUNED = ["cpu", "pruned"]  # the backends that run the cascade


class Work:
    params = (PRUNED, NDATA, NPERIODS)
    param_names = ["backend", "ndata", "nperiods"]

    def setup_cache(self):
        """One search per (backend, case), in one process."""
        found = {}
        for name in PRUNED:
            for ndata in NDATA:
                for nperiods in NPERIODS:
                    found[name, ndata, nperiods] = outcome(lambda: self._work(name, ndata, nperiods))
        return found

    @staticmethod
    def _work(name, ndata, nperiods):
        backend = runnable_backend(name, ndata, nperiods)
        c = case(ndata, nperiods)
        backend.search(c.plan, c.periods)
        return work_summary(backend.work)

    def setup(self, found, name, ndata, nperiods):
        self.work = reported(found[name, ndata, nperiods])


def _track(counter):
    def track(self, found, name, ndata, nperiods):
        return self.work[counter]

    track.__name__ = f"track_{counter}"
    track.unit = "fraction" if counter == "fraction_of_brute_force" else "count"
    return track


for _counter in (*COUNTERS, "fraction_of_brute_force"):
    setattr(Work, f"track_{_counter}", _track(_counter))
