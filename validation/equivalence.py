"""transitleastsquares' own backend contract, on our data: seven kinds of case
(a K2 window, an Earth-like transit with dy, narrow stellar limits, centred
time, no fit, a short light curve, the box template), each backend's
``power()`` compared with TLS's exact ``fused`` by ``backends.contract``.

    python -m validation.equivalence [--backends cpu basic ...] [--out DIR]

A backend is exact when every case is exact, approximate when every case is at
least approximate. Writes ``OUT/equivalence/equivalence.{md,csv}``; exits 1
when a backend declared exact (its class's ``exact``) is not exact, or one
declared approximate fails even the approximate bar.
"""

from __future__ import annotations

import argparse
import functools
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import numpy as np

from backends import contract, tls_power
from datasets import synthetic
from validation import outputs

NO_FIT_WARNING = "No transit were fit"
VERDICTS = ("fail", "approximate", "exact")  # worst first
K2_START = 2300.0  # [d] a BKJD of K2's campaigns
SUBDIR = "equivalence"  # under the output folder


@dataclass(frozen=True, eq=False)
class Case:
    """One light curve and the ``power()`` options that make it its kind."""

    name: str
    what: str
    t: np.ndarray
    y: np.ndarray
    dy: Optional[np.ndarray]
    options: dict = field(default_factory=dict)


def _lc(seed, **kwargs):
    lc = synthetic.simulate(seed=seed, preset="k2", **kwargs)
    return lc.t, lc.y, lc.dy


def _earth_like():
    """A 250 ppm, 13.1 d transit under heteroscedastic noise with its per-point errors."""
    rng = np.random.default_rng(12)
    t, model, _ = _lc(12, baseline=40.0, noise_ppm=0.0, period=13.1, t0=5.2, depth_ppm=250.0, b=0.2)
    dy = 150e-6 * (0.5 + rng.random(t.size))
    return t, model + rng.normal(0.0, dy), dy


def _no_fit():
    """Only brightenings: no box is deeper than ``transit_depth_min``."""
    rng = np.random.default_rng(15)
    t = synthetic.time_grid(20.0, 29.4, ((0.48, 1.5),))
    return t, 1.0 + np.abs(rng.normal(0.0, 500e-6, t.size)), np.full(t.size, 500e-6)


def _centred():
    t, y, _ = _lc(14, baseline=27.0, start=-13.5, snr=12.0)
    return t, y, None


@functools.lru_cache(maxsize=None)
def cases() -> tuple:
    """The seven cases, built from seeded synthetic data."""
    narrow = dict(R_star_min=0.9, R_star_max=1.1, M_star_min=0.9, M_star_max=1.1)
    return (
        Case("k2_window", "K2 window: 27 d at 29.4 min from BKJD 2300, a 1.5 d gap, SNR 15",
             *_lc(11, baseline=27.0, start=K2_START)),
        Case("earth_like_dy", "Earth-like: 250 ppm at 13.1 d over 40 d, per-point dy", *_earth_like()),
        Case("narrow_stellar_limits", "R* and M* limits 0.9-1.1 (few durations per period)",
             *_lc(13, baseline=27.0, snr=12.0), narrow),
        Case("centred_time", "times centred on 0 (half of them negative), dy None", *_centred()),
        Case("no_fit", "only brightenings: no transit fit, flat chi2", *_no_fit()),
        Case("short_light_curve", "2.5 d at 10 min: under 100 periods, so TLS's fallback grid (up to 2.5 d)",
             *_lc(16, baseline=2.5, cadence_min=10.0, gaps=(), period=0.9, snr=12.0)),
        Case("box_template", 'transit_template="box", 14 d at 10 min',
             *_lc(17, baseline=14.0, cadence_min=10.0, snr=15.0), dict(transit_template="box")),
    )


def power(case: Case, backend):
    """TLS's ``power()`` of ``case`` with a TLS backend (name or instance); TLS's
    no-fit warning is silenced (the results say it: period NaN, SDE 0)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=NO_FIT_WARNING)
        return tls_power.power(case.t, case.y, case.dy, backend=backend, **case.options)


@functools.lru_cache(maxsize=None)
def reference(name: str):
    """TLS's exact ``fused`` result of the case ``name`` (once per process)."""
    return power(next(c for c in cases() if c.name == name), "fused")


def classify(backend) -> dict:
    """Case name -> ``contract.Comparison`` of ``backend`` (a registered name or
    a ``TLSBackend`` instance) against ``fused``."""
    from backends.registry import get_backend
    from backends.tls_bridge import search_backend

    wrapped = search_backend(get_backend(backend))
    return {case.name: contract.compare(power(case, wrapped), reference(case.name)) for case in cases()}


def overall(comparisons: dict) -> str:
    """The worst verdict over the cases: exact only if every case is exact."""
    return min((c.verdict for c in comparisons.values()), key=VERDICTS.index)


def misdeclared(declared_exact: bool, verdict: str) -> Optional[str]:
    """Why a backend's ``exact`` flag contradicts its verdict (None if it does not)."""
    if declared_exact and verdict != "exact":
        return f"declared exact but {verdict}"
    if not declared_exact and verdict == "fail":
        return "declared approximate but fails the approximate bar"
    return None


def rows(name: str, declared_exact: bool, comparisons: dict) -> list:
    """One CSV row per case of one backend."""
    return [dict(backend=name, declared_exact=declared_exact, case=case, verdict=c.verdict, chi2_rel=c.chi2,
                 **{f"{k}_rel": v for k, v in c.stats.items()}, SDE=c.sde[0], SDE_fused=c.sde[1])
            for case, c in comparisons.items()]


def markdown(results: dict) -> str:
    """Backend x case table of verdicts (``results``: name -> (declared, comparisons)),
    then what each case is."""
    names = [c.name for c in cases()]
    lines = ["| backend | declared | " + " | ".join(names) + " | verdict | consistent |",
             "|---" * (len(names) + 4) + "|"]
    for backend, (declared, comparisons) in results.items():
        verdict = overall(comparisons)
        problem = misdeclared(declared, verdict)
        lines.append(f"| `{backend}` | {'exact' if declared else 'approximate'} | "
                     + " | ".join(comparisons[n].verdict for n in names)
                     + f" | {verdict} | {'yes' if problem is None else problem} |")
    lines += [""] + [f"- `{c.name}`: {c.what}" for c in cases()]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    import pandas as pd

    import backends

    parser = argparse.ArgumentParser(prog="python -m validation.equivalence", description=__doc__.split("\n\n")[0])
    parser.add_argument("--backends", nargs="+", help="default: every backend that can run here")
    parser.add_argument("--out", type=Path, default=outputs.default_out(), help=f"{outputs.HELP}; writes OUT/{SUBDIR}/")
    args = parser.parse_args(argv)
    names = args.backends or backends.available_methods()
    results = {}
    for name in names:
        declared = backends.registry.backend_class(name).exact
        results[name] = (declared, classify(name))
        print(f"{name}: {overall(results[name][1])}", flush=True)
    out = args.out / SUBDIR
    out.mkdir(parents=True, exist_ok=True)
    table = markdown(results)
    (out / "equivalence.md").write_text(table)
    pd.DataFrame([r for n, (d, c) in results.items() for r in rows(n, d, c)]).to_csv(out / "equivalence.csv",
                                                                                    index=False)
    print(table + f"written to {out}")
    problems = {n: misdeclared(d, overall(c)) for n, (d, c) in results.items()}
    problems = {n: p for n, p in problems.items() if p is not None}
    for name, problem in problems.items():
        print(f"{name}: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
