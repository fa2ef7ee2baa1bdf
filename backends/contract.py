"""The exactness contract: transitleastsquares' own backend-equivalence
tolerances, and the one place that compares two searches by them.

TLS 2.0's tests call a backend *exact* when every per-period chi2 is within
1e-10 relative of ``fused`` and period, T0, duration, depth, SDE and SNR are
within 1e-7 relative; *approximate* when the chi2 are within 5e-3 relative and
|dSDE| < 0.02 SDE + 0.05. Tests, scripts, benchmarks and validation all ask
here, so the bars live in one place.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

EXACT_CHI2_RTOL = 1e-10
EXACT_STAT_RTOL = 1e-7
APPROX_CHI2_RTOL = 5e-3
APPROX_SDE_RTOL, APPROX_SDE_ATOL = 0.02, 0.05

# results keys held to EXACT_STAT_RTOL (TLS's names)
STAT_KEYS = ("period", "T0", "duration", "depth", "SDE", "snr")


def relative(a, b) -> float:
    """Largest |a - b| / |b| over the entries (0 where both are 0; NaN == NaN)."""
    a, b = np.atleast_1d(np.asarray(a, float)), np.atleast_1d(np.asarray(b, float))
    if a.shape != b.shape:
        return float("inf")
    both_nan = np.isnan(a) & np.isnan(b)
    diff = np.abs(a - b)
    scale = np.abs(b)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(diff == 0, 0.0, diff / scale)
    rel = np.where(both_nan, 0.0, rel)
    rel = np.where(np.isnan(rel), np.inf, rel)
    return float(rel.max()) if rel.size else 0.0


@dataclass
class Comparison:
    """How one search (``ours``) differs from a reference: worst relative
    per-period chi2 and relative difference of each of ``STAT_KEYS``."""

    chi2: float
    stats: dict = field(default_factory=dict)
    sde: tuple = (float("nan"), float("nan"))  # (ours, reference)

    @property
    def exact(self) -> bool:
        return self.chi2 <= EXACT_CHI2_RTOL and all(v <= EXACT_STAT_RTOL for v in self.stats.values())

    @property
    def approximate(self) -> bool:
        ours, ref = self.sde
        sde_ok = (np.isnan(ours) and np.isnan(ref)) or abs(ours - ref) < APPROX_SDE_RTOL * abs(ref) + APPROX_SDE_ATOL
        return self.chi2 <= APPROX_CHI2_RTOL and bool(sde_ok)

    def meets(self, exact: bool) -> bool:
        """Whether the exact contract (``exact``) or the approximate one holds."""
        return self.exact if exact else self.approximate

    @property
    def verdict(self) -> str:
        """"exact", "approximate" or "fail"."""
        return "exact" if self.exact else "approximate" if self.approximate else "fail"

    def worst(self) -> str:
        """One line naming the largest differences."""
        parts = [f"chi2 {self.chi2:.2e}"] + [f"{k} {v:.2e}" for k, v in self.stats.items() if v > 0]
        return ", ".join(parts)


def compare_stats(ours, reference) -> float:
    """Worst relative per-period chi2 of two ``PeriodStats`` (same periods)."""
    return relative(ours.chi2, reference.chi2)


def compare(ours, reference) -> Comparison:
    """Compare two TLS results objects (``power()`` outputs of one light curve)."""
    stats = {key: relative(ours[key], reference[key]) for key in STAT_KEYS}
    return Comparison(chi2=relative(ours["chi2"], reference["chi2"]), stats=stats,
                      sde=(float(ours["SDE"]), float(reference["SDE"])))


def assert_matches(ours, reference, exact: bool = True, what: str = "") -> Comparison:
    """AssertionError unless ``ours`` meets the exact contract against ``reference``
    (``exact``; for an exact backend) or the approximate one (TLS results
    objects, or ``PeriodStats`` for the per-period chi2 alone)."""
    if hasattr(ours, "chi2") and not isinstance(ours, dict):
        found = Comparison(chi2=compare_stats(ours, reference))
        met = found.chi2 <= (EXACT_CHI2_RTOL if exact else APPROX_CHI2_RTOL)
    else:
        found = compare(ours, reference)
        met = found.meets(exact)
    if not met:
        raise AssertionError(f"{what}: not {'exact' if exact else 'approximate'} by TLS's contract: "
                             f"{found.worst()}")
    return found


def assert_exact(ours, reference, what: str = "") -> Comparison:
    """``assert_matches`` with the exact contract."""
    return assert_matches(ours, reference, True, what)
