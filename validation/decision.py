"""The protocol's decision rule, fixed before any outcome is seen (pure functions).

Per cadence:

1. Threshold: the reference's calibration nulls give the SDE threshold at a 1 %
   false-positive rate, their ceil(0.99 n)-th smallest SDE (``threshold``); a
   search *detects* when its SDE is above it. Both columns use this one
   threshold: a user who swaps CPU TLS for the backend keeps theirs.
2. Counts (``Counts``): on the injections, each column's recoveries (detected,
   at the right period: ``validation.protocol_report``) and the discordant pairs
   (``lost``: the reference recovers, the backend not; ``gained``: the other
   way); on the test nulls, each column's false positives and the discordant
   pairs (``extra``: only the backend's; ``fewer``: only the reference's).
3. Bounds: exact Clopper-Pearson intervals, simultaneous at 95 % over the
   cadence's eight proportions (four rates, four discordant-pair proportions)
   by Bonferroni: each at 1 - 0.05 / 8. The paired differences are bounded
   through the discordant pairs: recovery drop (lost - gained) / n has upper
   bound hi(lost) - lo(gained); the false-positive change (extra - fewer) / n
   lies in [lo(extra) - hi(fewer), hi(extra) - lo(fewer)].
4. Pass: the drop's upper bound is below 5 percentage points and the change's
   interval lies within +-2 points. Too few searches give wide bounds, so a
   small run cannot pass; a method passes when every cadence run does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

FALSE_POSITIVE_RATE = 0.01
CONFIDENCE = 0.95
MAX_RECOVERY_DROP = 0.05  # strictly below
MAX_FPR_CHANGE = 0.02  # inclusive, either way
PROPORTIONS = ("reference_recovery", "backend_recovery", "reference_fpr", "backend_fpr",
               "lost", "gained", "extra", "fewer")


def threshold(null_sdes, rate=FALSE_POSITIVE_RATE):
    """SDE threshold from calibration-null SDEs: at most ``rate`` of them lie
    above it (the ceil((1 - rate) n)-th smallest). NaN (a failed search) is
    left out."""
    sdes = np.sort(np.asarray(null_sdes, np.float64))
    sdes = sdes[np.isfinite(sdes)]
    if sdes.size == 0:
        raise ValueError("no calibration null with a finite SDE: no threshold")
    return float(sdes[math.ceil((1 - rate) * sdes.size) - 1])


def clopper_pearson(k, n, alpha):
    """Exact two-sided (1 - alpha) interval of a binomial proportion k / n ([0, 1] when n = 0)."""
    if not 0 <= k <= n:
        raise ValueError(f"count {k} out of 0..{n}")
    if n == 0:
        return 0.0, 1.0
    from scipy.stats import binomtest

    ci = binomtest(int(k), int(n)).proportion_ci(1 - alpha, method="exact")
    return float(ci.low), float(ci.high)


@dataclass(frozen=True)
class Counts:
    """One cadence's outcomes, paired item by item (see the module docstring)."""

    injections: int
    reference_recovered: int
    backend_recovered: int
    lost: int
    gained: int
    nulls: int
    reference_fp: int
    backend_fp: int
    extra: int
    fewer: int

    def check(self):
        pairs = ((self.injections, self.reference_recovered, self.backend_recovered, self.lost,
                  self.gained), (self.nulls, self.reference_fp, self.backend_fp, self.fewer,
                                 self.extra))
        for n, ref, back, only_ref, only_back in pairs:
            if min(n, ref, back, only_ref, only_back) < 0 or ref + only_back > n:
                raise ValueError(f"inconsistent counts: {self}")
            if ref - only_ref != back - only_back or only_ref > ref or only_back > back:
                raise ValueError(f"discordant pairs do not match the rates: {self}")


@dataclass(frozen=True)
class Verdict:
    passed: bool
    recovery_drop: float  # point estimates, fractions
    fpr_change: float
    recovery_drop_upper: float
    fpr_change_bounds: tuple
    rates: dict = field(default_factory=dict)  # PROPORTIONS -> k / n (NaN when n = 0)
    bounds: dict = field(default_factory=dict)  # PROPORTIONS -> (low, high), simultaneous
    reasons: tuple = ()


def judge(counts: Counts, confidence=CONFIDENCE) -> Verdict:
    """The rule (module docstring) applied to one cadence's counts."""
    counts.check()
    alpha = (1 - confidence) / len(PROPORTIONS)
    c = counts
    ks = dict(reference_recovery=(c.reference_recovered, c.injections),
              backend_recovery=(c.backend_recovered, c.injections),
              reference_fpr=(c.reference_fp, c.nulls), backend_fpr=(c.backend_fp, c.nulls),
              lost=(c.lost, c.injections), gained=(c.gained, c.injections),
              extra=(c.extra, c.nulls), fewer=(c.fewer, c.nulls))
    bounds = {name: clopper_pearson(k, n, alpha) for name, (k, n) in ks.items()}
    drop_upper = bounds["lost"][1] - bounds["gained"][0]
    change = (bounds["extra"][0] - bounds["fewer"][1], bounds["extra"][1] - bounds["fewer"][0])
    reasons = []
    if not drop_upper < MAX_RECOVERY_DROP:
        reasons.append(f"recovery drop upper bound {100 * drop_upper:.2f} pp is not below "
                       f"{100 * MAX_RECOVERY_DROP:g} pp")
    if not (-MAX_FPR_CHANGE <= change[0] and change[1] <= MAX_FPR_CHANGE):
        reasons.append(f"false-positive change bounds [{100 * change[0]:.2f}, {100 * change[1]:.2f}] "
                       f"pp are not within +-{100 * MAX_FPR_CHANGE:g} pp")
    return Verdict(passed=not reasons, recovery_drop=_fraction(c.lost - c.gained, c.injections),
                   fpr_change=_fraction(c.extra - c.fewer, c.nulls), recovery_drop_upper=drop_upper,
                   fpr_change_bounds=change, rates={k: _fraction(*kn) for k, kn in ks.items()},
                   bounds=bounds, reasons=tuple(reasons))


def _fraction(k, n):
    return k / n if n else math.nan
