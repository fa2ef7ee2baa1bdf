"""``reference``: TLS's own ``core.search_period``, one period at a time in
one thread. Deliberately slow; kept as the oracle the fast backends are tested
against (it is the code that defines the statistic)."""

from __future__ import annotations

import numpy as np

from backends.protocol import PeriodStats, TLSBackend


class ReferenceBackend(TLSBackend):
    name = "reference"
    summary = "TLS 2.0.4 core.search_period itself, serial (slow oracle for tests)"
    fuses_fold_sort = True

    def chi2_scan(self, plan, folded, periods, lo, hi):
        from transitleastsquares.core import search_period

        p = plan.problem
        found = [
            search_period(period, p.t, p.y, p.dy, p.transit_depth_min, p.R_star_min,
                          p.R_star_max, p.M_star_min, p.M_star_max, p.lc_arr,
                          p.lc_cache_overview, p.T0_search_margin)
            for period in periods
        ]
        found = np.array(found, dtype=np.float64).reshape(-1, 4)
        return PeriodStats(found[:, 1], found[:, 2].astype(np.int64), found[:, 3])

    def max_batch_periods(self, plan):
        return 64
