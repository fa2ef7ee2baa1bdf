"""The peers on the same cases as the backends: time of one warm run and, beside
it, the relative error of the period each finds (the injected one is 3.7 d)."""

from __future__ import annotations

import itertools

from benchmarks import peers
from benchmarks.bench_stages import Timing
from benchmarks.cases import (NDATA, NPERIODS, case, outcome, period_error, reported,
                              require_budget)


def runnable_peer(name, ndata, nperiods):
    """NotImplementedError (asv's skip) when peer ``name`` cannot run this case here."""
    why = peers.missing(name)
    if why is not None:
        raise NotImplementedError(f"peer {name!r} unavailable: {why}")
    require_budget(peers.PEERS[name][0], ndata, nperiods, name)


class Peers(Timing):
    params = (list(peers.PEERS), NDATA, NPERIODS)
    param_names = ["peer", "ndata", "nperiods"]
    timeout = 120  # GTLS and CETRA have never been timed here: a stuck case costs 2 minutes

    def prepare(self, name, ndata, nperiods):
        runnable_peer(name, ndata, nperiods)
        self.case = case(ndata, nperiods)
        peers.run(name, self.case)  # warm-up: JIT, kernel compilation

    def time_peer(self, name, ndata, nperiods):
        peers.run(name, self.case)


def peer_error(name, ndata, nperiods):
    """``outcome`` of the relative period error of peer ``name`` on a case."""
    def error():
        runnable_peer(name, ndata, nperiods)
        c = case(ndata, nperiods)
        return period_error(peers.run(name, c), c.truth)

    return outcome(error)


class PeerAccuracy:
    """The period each peer finds on the K2-like case (4,320 points, 10,000
    periods), every run in ``setup_cache`` (the GPU peers each in its own
    process, ``backends.peers``: CETRA's PyCUDA context and GTLS's CuPy one in
    one process gave "invalid resource handle")."""

    params = (Peers.params[0], [4320], [10000])
    param_names = Peers.param_names
    timeout = 600

    def setup_cache(self):
        """{(peer, ndata, nperiods): relative period error, or the exception
        that keeps the peer from running that case}."""
        grid = list(itertools.product(*self.params[1:]))
        errors = {}
        for name in self.params[0]:
            errors.update({(name, *cell): peer_error(name, *cell) for cell in grid})
        return errors

    def setup(self, errors, name, ndata, nperiods):
        self.error = reported(errors[(name, ndata, nperiods)])

    def track_peer_period_error(self, errors, name, ndata, nperiods):
        return self.error

    track_peer_period_error.unit = "fraction"
