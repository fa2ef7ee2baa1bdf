"""The peers on the GPU machine: what each finds on three shipped curves, and
whether GTLS 0.4.4 answering the shortest trial period and CETRA 1.0 failing
on a later call ("cuFuncSetBlockShape failed: invalid resource handle") are
the peers' faults or how they were called.

    python scripts/peer_diagnosis.py [--parts curves gtls cetra] [--period-max 20] [--out DIR]

curves  every peer through backends.peers (a process of its own, TLS's trial
        periods) and CPU TLS (fused) on K2-3, K2-140 and WASP-126; the
        peer's three searches share its worker process.
gtls    GTLS called directly (each variant in a fresh process), with what its
        first pass left in its chi2 (NaN, inf, its no-fit value len(y)) and
        its SDE spectrum (NaN):
          own_grid      gputls's own grid and defaults, period_max: how it was first called
          peer          as backends.peers calls it (TLS's periods, T0_fit_margin 0.01)
          dy_none       own_grid without dy (GTLS takes std(y))
          median_norm   own_grid with y and dy divided by median(y)
          patched       own_grid with its first-pass kernel reading the template from
                        global memory instead of shared memory that its threads fill only
                        in part (128 threads for a 256-wide tile; none that skip the shift)
          peer_patched  peer, patched
        Wrong in own_grid and peer, right when patched: GTLS's kernel. Right
        with dy_none or median_norm: how it was called.
cetra   CETRA's adapter (backends.peers.cetra.run) in fresh processes:
          alone         three searches, nothing else on the GPU
          after_cupy    a search; cupy.cuda.Device(0).use(), what GTLS does first in
                        every search (cudaSetDevice binds the primary context); a search
          after_gtls    a search; a GTLS search; a search
          after_basic   a search; the workbench's PyCUDA backend basic (the primary
                        context, pushed and popped); a search
        with, after each step, whether the current CUDA context is still the one
        CETRA's import created (pycuda.autoinit) and loaded its kernels in.
        Failing only after another CUDA user: how it is called (a process of
        its own fixes it); failing alone: CETRA's fault.

Writes DIR/peer_diagnosis.json and DIR/peer_diagnosis.md (default ./peer_diagnosis).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from multiprocessing import get_context
from pathlib import Path

import numpy as np

from backends.grids import trial_periods
from backends.interrupts import last_line

CURVES = ("K2-3_K2_C01_everest", "K2-140_K2_C10_juliet", "WASP-126_TESS_S01_alert")
GTLS_VARIANTS = ("own_grid", "peer", "dy_none", "median_norm", "patched", "peer_patched")
CETRA_EXPERIMENTS = {
    "alone": ("cetra:0", "cetra:1", "cetra:2"),
    "after_cupy": ("cetra:0", "cupy", "cetra:1"),
    "after_gtls": ("cetra:0", "gtls:1", "cetra:1"),
    "after_basic": ("cetra:0", "basic:1", "cetra:1"),
}
# GTLS's first-pass kernel reads its template from a shared tile that not every thread fills
SHARED_READ = "s_signal[i] * reverse_scale"
GLOBAL_READ = "signal[tile_start + i] * reverse_scale"


def load(index_or_name):
    from datasets import load as load_curve

    name = CURVES[int(index_or_name)] if str(index_or_name).isdigit() else index_or_name
    lc = load_curve(name)
    return name, lc.t, lc.y, lc.dy


def in_fresh_process(fn, *args):
    """``fn(*args)`` in a new process (spawn); a dict with ``error`` if it raised or died."""
    try:
        with ProcessPoolExecutor(1, mp_context=get_context("spawn")) as pool:
            return pool.submit(fn, *args).result()
    except BrokenProcessPool as exc:
        return {"error": f"process died: {exc}"}
    except Exception as exc:
        return {"error": last_line(exc)}


def unavailable(peer):
    """[{"error": why}] when ``peer`` cannot run here, else None."""
    from backends import peers

    why = peers.missing(peer)
    return [{"error": f"{peer} cannot run here: {why}"}] if why else None


# ---- curves: the peers as the workbench runs them, beside CPU TLS ---------------------

def curves_part(options):
    from backends import peers
    from backends.tls_power import power

    rows = []
    for index in range(len(CURVES)):
        name, t, y, dy = load(index)
        start = time.perf_counter()
        r = power(t, y, dy, backend="fused", use_threads=os.cpu_count(), **options)
        rows.append(dict(curve=name, search="tls-fused", status="ok", period=r.period, sde=r.SDE,
                         t0=r.T0, duration=r.duration, runtime_s=time.perf_counter() - start))
    for peer in peers.peer_names():
        why = peers.missing(peer)
        for index in range(len(CURVES)):
            name, t, y, dy = load(index)
            found = {"status": f"unavailable: {why}"} if why else peers.search(peer, t, y, dy, **options)
            rows.append(dict(curve=name, search=peer, **{k: found.get(k) for k in (
                "status", "error", "period", "sde", "snr", "t0", "duration", "depth_ppm", "runtime_s")}))
    peers.shutdown()
    return rows


# ---- gtls: where its shortest trial period comes from ---------------------------------

@contextlib.contextmanager
def patched_kernel(on):
    """GTLS with its first-pass kernel reading the template from global memory."""
    if not on:
        yield
        return
    from gputls import GPUFun

    original = GPUFun.getGPUCode

    def patched():
        code = original()
        if code.count(SHARED_READ) != 1:
            raise RuntimeError(f"gputls's kernel source changed: {SHARED_READ!r} is not there once")
        return code.replace(SHARED_READ, GLOBAL_READ)

    GPUFun.getGPUCode = patched
    try:
        yield
    finally:
        GPUFun.getGPUCode = original


def chi2_report(result, n_points):
    """What GTLS's first pass and spectrum hold: NaN, inf, its no-fit value len(y)."""
    raw = np.ma.filled(np.ma.asarray(result.raw_chi2, dtype=np.float64), np.nan)
    spectrum = np.ma.filled(np.ma.asarray(result.power, dtype=np.float64), np.nan)
    return dict(chi2_nan=int(np.isnan(raw).sum()), chi2_inf=int(np.isinf(raw).sum()),
                chi2_no_fit=int((raw == np.float32(n_points)).sum()), chi2_nonpositive=int((raw <= 0).sum()),
                chi2_min=float(np.nanmin(raw)) if np.isfinite(raw).any() else math.nan,
                chi2_median=float(np.nanmedian(raw)) if np.isfinite(raw).any() else math.nan,
                power_nan=int(np.isnan(spectrum).sum()), n_periods=int(raw.size))


def gtls_variant(variant, index, options):
    import gputls

    from backends.peers import gtls
    from backends.peers.outcome import number

    name, t, y, dy = load(index)
    periods = trial_periods(t, y, dy, **options)
    row = dict(curve=name, variant=variant, shortest_tls_period=float(periods.min()))
    try:
        with patched_kernel(variant.endswith("patched")):
            start = time.perf_counter()
            if variant.startswith("peer"):
                result, _ = gtls.search(t, y, dy, periods, options)
            else:
                if variant == "dy_none":
                    dy = None
                if variant == "median_norm":
                    y, dy = y / np.median(y), dy / np.median(y)
                result = gputls.gtls(t, y, dy, verbose=False).power(show_progress_bar=False, **options)
            row["seconds"] = time.perf_counter() - start
    except Exception as exc:
        return dict(row, error=last_line(exc))
    own_periods = np.ma.filled(np.ma.asarray(result.periods, dtype=np.float64), np.nan)
    found = {key: number(getattr(result, attribute)) for key, attribute in (
        ("period", "period"), ("sde", "SDE"), ("snr", "snr"), ("t0", "T0"), ("duration", "duration"),
        ("depth", "depth"))}
    return dict(row, **found, shortest_trial_period=float(np.nanmin(own_periods)), mean_y=float(np.mean(y)),
                **chi2_report(result, t.size))


def gtls_part(options):
    return unavailable("peer:gtls") or [in_fresh_process(gtls_variant, variant, index, options)
            for index in range(len(CURVES)) for variant in GTLS_VARIANTS]


# ---- cetra: its context and other CUDA users in the same process ----------------------

def context_state():
    """Whether the current CUDA context is the one ``import cetra`` created."""
    import pycuda.autoinit
    import pycuda.driver as drv

    current = drv.Context.get_current()
    if current is None:
        return "none"
    return "cetra's own" if current.handle == pycuda.autoinit.context.handle else f"another ({current.handle:#x})"


def cetra_step(step, options):
    kind, _, index = step.partition(":")
    if kind == "cupy":
        import cupy

        cupy.cuda.Device(0).use()
        return dict(result=float(cupy.arange(3).sum()))
    name, t, y, dy = load(index)
    if kind == "basic":
        import backends

        return dict(curve=name, period=float(backends.search(t, y, dy, backend="basic", **options).period))
    periods = trial_periods(t, y, dy, **options)
    if kind == "gtls":
        from backends.peers import gtls

        return dict(curve=name, period=float(gtls.search(t, y, dy, periods, options)[0].period))
    from backends.peers import cetra

    return dict(curve=name, period=cetra.run(t, y, dy, periods, options)["period"])


def cetra_experiment(steps, options):
    import cetra  # noqa: F401  its import creates its context and loads its kernels there

    rows = []
    for step in steps:
        start = time.perf_counter()
        try:
            row = dict(step=step, **cetra_step(step, options))
        except Exception as exc:
            row = dict(step=step, error=last_line(exc))
        rows.append(dict(row, seconds=time.perf_counter() - start, context_after=context_state()))
    return rows


def cetra_part(options):
    return {"unavailable": unavailable("peer:cetra")} if unavailable("peer:cetra") else {
        name: in_fresh_process(cetra_experiment, steps, options) for name, steps in CETRA_EXPERIMENTS.items()}


# ---- report ---------------------------------------------------------------------------

def table(rows):
    """The dict rows as a pipe table (periods to 6 significant digits)."""
    import pandas as pd

    from validation.report import markdown_table

    return markdown_table(pd.DataFrame([r for r in rows if isinstance(r, dict)]).fillna(""), digits=6)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--parts", nargs="+", default=["curves", "gtls", "cetra"], choices=["curves", "gtls", "cetra"])
    p.add_argument("--period-max", type=float, default=20.0)
    p.add_argument("--out", type=Path, default=Path("peer_diagnosis"))
    args = p.parse_args(argv)
    options = dict(period_max=args.period_max)
    parts = {"curves": curves_part, "gtls": gtls_part, "cetra": cetra_part}
    found, lines = {}, [f"# Peers: diagnosis (period_max {args.period_max:g})", ""]
    for part in args.parts:
        start = time.perf_counter()
        found[part] = parts[part](options)
        print(f"{part}: {time.perf_counter() - start:.0f} s", file=sys.stderr)
        lines += [f"## {part}", ""]
        if part == "cetra":
            for name, rows in found[part].items():
                lines += [f"### {name}", "", table(rows if isinstance(rows, list) else [rows]), ""]
        else:
            lines += [table(found[part]), ""]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "peer_diagnosis.json").write_text(json.dumps(found, indent=1, default=str))
    (args.out / "peer_diagnosis.md").write_text("\n".join(lines))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
