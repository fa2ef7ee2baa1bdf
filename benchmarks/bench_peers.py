"""The peers on the same cases as the backends: time of one warm run and, beside
it, the relative error of the period each finds (the injected one is 3.7 d)."""

from __future__ import annotations

from benchmarks import peers
from benchmarks.bench_stages import Timing
from benchmarks.cases import NDATA, NPERIODS, case, period_error, require_budget


class Peers(Timing):
    params = (list(peers.PEERS), NDATA, NPERIODS)
    param_names = ["peer", "ndata", "nperiods"]

    def setup(self, name, ndata, nperiods):
        why = peers.missing(name)
        if why is not None:
            raise NotImplementedError(f"peer {name!r} unavailable: {why}")
        require_budget(peers.PEERS[name][0], ndata, nperiods)
        self.case = case(ndata, nperiods)
        self.period = peers.run(name, self.case)  # warm-up: JIT, kernel compilation

    def time_peer(self, name, ndata, nperiods):
        peers.run(name, self.case)

    def track_peer_period_error(self, name, ndata, nperiods):
        return period_error(self.period, self.case.truth)

    track_peer_period_error.unit = "fraction"
