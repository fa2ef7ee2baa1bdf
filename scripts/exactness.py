"""Exactness sweep: every backend (``cpu`` included) against TLS's exact
``fused`` backend, on the shipped real light curves, seeded synthetic ones
(a noise-only and a grazing one among them) and, with ``--big``, one of
over 100,000 points.

    python scripts/exactness.py --backends cpu basic thrust --synthetic 50 --big

Bars: TLS's own contract (``backends.contract``), exact or approximate by each
backend's ``exact`` attribute: exact, every per-period chi2 within
EXACT_CHI2_RTOL relative and period, T0, duration, depth, SDE and SNR within
EXACT_STAT_RTOL; approximate, chi2 within APPROX_CHI2_RTOL and |dSDE| within
APPROX_SDE_RTOL * SDE + APPROX_SDE_ATOL. Writes ``<out>/exactness.csv`` and
``<out>/exactness.md``; exits 1 on a miss, 2 (one line, before any search)
when a backend is unknown or cannot run here.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import backends  # noqa: E402
import datasets  # noqa: E402
from backends import contract, inputs  # noqa: E402
from backends.protocol import InputTooLarge  # noqa: E402
from validation import outputs  # noqa: E402


def cases(n_synthetic, big, real):
    if real:
        for name in datasets.REAL_NAMES:
            lc = datasets.load(name)
            yield name, lc.t, lc.y, lc.dy
    for seed in range(n_synthetic):
        preset = ("k2", "tess")[seed % 2]
        lc = datasets.simulate(seed=seed, preset=preset, start=3000.0 if seed % 4 < 2 else 0.0)
        yield f"synthetic-{preset}-{seed}", lc.t, lc.y, lc.dy
    for name, kind in (("noise-only", dict(snr=0)), ("grazing", dict(b=0.95, snr=20))):
        lc = datasets.simulate(seed=500, preset="k2", start=3000.0, **kind)
        yield f"synthetic-k2-{name}", lc.t, lc.y, lc.dy
    if big:
        lc = datasets.simulate(seed=999, preset="tess", cadence_min=20 / 60, start=1400.0)
        yield "synthetic-tess-20s-big", lc.t, lc.y, lc.dy


def run_fused(t, y, dy, threads):
    from backends.tls_power import power

    start = time.perf_counter()
    r = power(t, y, dy, backend="fused", use_threads=threads)
    return r, time.perf_counter() - start


def run_ours(name, t, y, dy, threads):
    start = time.perf_counter()
    r = backends.search(t, y, dy, backend=name, use_threads=threads)
    return r, time.perf_counter() - start


def unrunnable(names):
    """Why one of the backends ``names`` cannot run here (None when all can)."""
    why = backends.available_backends()
    for name in names:
        if name not in why:
            return f"unknown backend {name!r}; known: {', '.join(why)}"
        if why[name]:
            return f"backend {name!r} cannot run here: {why[name]}"
    return None


def compare(case, n, name, ref_name, got, ref, seconds):
    """A row: how ``got`` differs from ``ref`` and whether it meets its backend's contract."""
    exact = backends.registry.backend_class(name).exact
    found = contract.compare(got, ref)
    return dict(case=case, ndata=n, periods=len(ref.periods), backend=name, reference=ref_name,
                contract="exact" if exact else "approximate", verdict=found.verdict,
                max_rel_chi2=found.chi2, **{f"rel_{k}": v for k, v in found.stats.items()},
                period=got.period, ref_period=ref.period, same_period=bool(got.period == ref.period),
                SDE=got.SDE, ref_SDE=ref.SDE, seconds=seconds, ok=found.meets(exact))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--backends", nargs="+", default=["cpu"])
    ap.add_argument("--synthetic", type=int, default=50, help="number of seeded synthetic curves")
    ap.add_argument("--big", action="store_true", help="add one >= 100,000-point curve")
    ap.add_argument("--no-real", action="store_true", help="skip the shipped real light curves")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--out", type=Path, default=outputs.default_out() / "exactness", help=outputs.HELP)
    args = ap.parse_args(argv)
    why = unrunnable(args.backends)
    if why:
        print(f"error: {why}", file=sys.stderr)
        return 2

    rows = []
    args.out.mkdir(parents=True, exist_ok=True)
    for case, t, y, dy in cases(args.synthetic, args.big, not args.no_real):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            lc = inputs.clean(t, y, dy)
            fused, fused_s = run_fused(lc.t, lc.y, lc.dy, args.threads)
            cpu, cpu_s = run_ours("cpu", lc.t, lc.y, lc.dy, args.threads)
            found = [compare(case, lc.t.size, "cpu", "fused", cpu, fused, cpu_s)]
            found[0]["fused_seconds"] = fused_s
            for name in args.backends:
                if name == "cpu":
                    continue
                try:
                    got, secs = run_ours(name, lc.t, lc.y, lc.dy, args.threads)
                except InputTooLarge as exc:  # by design, e.g. simple beyond shared memory
                    found.append(dict(case=case, ndata=lc.t.size, backend=name, reference="cpu",
                                      refused=str(exc), ok=True))
                    continue
                found.append(compare(case, lc.t.size, name, "fused", got, fused, secs))
        for r in found:
            if "refused" in r:
                print(f"{r['case']:32s} {r['backend']:8s} refused: {r['refused']}", flush=True)
                continue
            print(f"{r['case']:32s} {r['backend']:8s} vs {r['reference']:5s} chi2 {r['max_rel_chi2']:.1e} "
                  f"dSDE {r['rel_SDE']:.1e} P {r['period']:.5f} {r['verdict']} "
                  f"({r['contract']} wanted: {'ok' if r['ok'] else 'MISS'}, {r['seconds']:.2f} s)", flush=True)
        rows += found
        pd.DataFrame(rows).to_csv(args.out / "exactness.csv", index=False)  # a cut-off run keeps its cases

    if not rows:
        print("no cases selected")
        return 1
    df = pd.DataFrame(rows)
    if "refused" not in df:
        df["refused"] = None
    scored = df[df.refused.isna()]
    summary = scored.groupby(["backend", "reference", "contract"]).agg(
        cases=("ok", "size"), passed=("ok", "sum"), worst_rel_chi2=("max_rel_chi2", "max"),
        worst_rel_SDE=("rel_SDE", "max"), same_period=("same_period", "sum"),
        median_seconds=("seconds", "median"))
    device = next((backends.frontend.device_name(backends.get_backend(b)) for b in args.backends
                   if backends.registry.backend_class(b).device == "gpu"), "CPU only")
    bars = (f"exact: per-period chi2 within {contract.EXACT_CHI2_RTOL:g} relative, "
            f"{', '.join(contract.STAT_KEYS)} within {contract.EXACT_STAT_RTOL:g}; approximate: chi2 "
            f"within {contract.APPROX_CHI2_RTOL:g}, |dSDE| < {contract.APPROX_SDE_RTOL:g} SDE + "
            f"{contract.APPROX_SDE_ATOL:g}")
    (args.out / "exactness.md").write_text(
        f"# Exactness sweep\n\nDevice: {device}; threads: {args.threads}\n\n"
        f"TLS's contract (backends.contract), by each backend's `exact`: {bars}. cpu against "
        "fused, every other backend against cpu.\n\n"
        + summary.to_markdown() + "\n\nRefused (by design, counted as neither pass nor miss):\n\n"
        + (df[df.refused.notna()][["case", "ndata", "backend", "refused"]].to_markdown(index=False)
           if df.refused.notna().any() else "none") + "\n\nMisses:\n\n"
        + (df[~df.ok].to_markdown(index=False) if (~df.ok).any() else "none") + "\n")
    print(summary.to_string())
    return 0 if df.ok.all() else 1


if __name__ == "__main__":
    raise SystemExit(main())
