"""``python -m validation.recover``: injection-recovery of a backend against CPU TLS.

Each case runs the backend (``backends.search``) and CPU transitleastsquares
(exact ``fused`` statistic, cached on disk) on the same cleaned input with the
same options; a multi-planet light curve is searched again with each CPU TLS
detection masked. Everything goes under ``--out`` (default: outside the
source tree, ``validation.outputs``). Results go to a per-run journal as each
case finishes (``OUT/cache/runs/<suite>-<backend>-seed<seed>/``), so an
interrupted run loses nothing and a re-run resumes (``--fresh`` starts over,
e.g. after changing the backend). Then: a console table, CSV + Parquet +
markdown + figures in ``OUT``, and the exit status: 1 when the backend misses a case
CPU TLS recovers at SDE >= 9 or detects fewer cases than CPU TLS by more than
``--margin`` (fraction of searches, at least one), 2 on bad arguments or an
unavailable backend, 3 when a ``--jobs`` worker process died (a crash: its
signal is named), 130 when interrupted.
"""

from __future__ import annotations

import argparse
import functools
import math
import os
import sys
import warnings
from pathlib import Path

import numpy as np

from validation import cases as suites
from validation import metrics, outputs, processes, report, runs, store

TRUTH_FIELDS = ("period", "t0", "duration", "depth_ppm", "snr", "b")


def pick_truth(remaining, *found):
    """The remaining planet a search found (period or an alias of it), else the strongest one."""
    for outcome in found:
        for truth in remaining:
            flags = metrics.compare(outcome, truth)
            if flags["recovered"] or flags["alias"]:
                return truth
    return max(remaining, key=lambda p: p["snr"]) if remaining else None


def make_row(case, info, step, n_points, truth, outcomes):
    row = dict(case_id=case.id, kind=case.kind, target=info["target"], step=step,
               planet=None if truth is None else truth["name"], n_points=n_points,
               options=str(case.options or ""), preprocessing=info.get("steps", ""))
    for key in TRUTH_FIELDS:
        row[f"truth_{key}"] = math.nan if truth is None else truth.get(key, math.nan)
    if truth is None:
        row["truth_snr"] = 0.0
    for side, outcome in outcomes.items():
        for key in runs.FIELDS:
            row[f"{side}_{key}"] = outcome[key]
        row.update({f"{side}_{k}": v for k, v in metrics.compare(outcome, truth).items()})
    got, cpu = outcomes["backend"], outcomes["cpu"]
    row.update(metrics.agreement(got, cpu))
    row.update(backend_name=got.get("name"), device=got.get("device"),
               cpu_cached=cpu.get("cached", False))
    return row


def cleaned_input(case):
    """(input, cleaned light curve) of a case: what every search of it starts from."""
    from backends.inputs import clean

    data = suites.materialize(case)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # what clean() drops or sorts is expected here
        return data, clean(data.t, data.y, data.dy)


def run_case(case, sides):
    """(rows, arrays): one row per search of the case, arrays of its first search.

    ``sides``: name -> search(t, y, dy, options) -> (scalars, arrays), with at
    least "backend" and "cpu" (CPU TLS, whose detections are masked between
    the searches of a multi-planet curve)."""
    from transitleastsquares import transit_mask

    data, lc = cleaned_input(case)
    t, y, dy = lc.t, lc.y, lc.dy
    remaining = list(data.truths)
    rows, arrays = [], {}
    for step in range(max(1, len(data.truths))):
        found = {side: search(t, y, dy, case.options) for side, search in sides.items()}
        outcomes = {side: scalars for side, (scalars, _) in found.items()}
        cpu = outcomes["cpu"]
        truth = pick_truth(remaining, cpu, outcomes["backend"])
        rows.append(make_row(case, data.info, step, t.size, truth, outcomes))
        if step == 0:
            arrays = {f"{side}_{k}": v for side, (_, arr) in found.items() for k, v in arr.items()}
        if truth is not None:
            remaining.remove(truth)
        if not remaining or not np.isfinite(cpu["period"]):
            break
        keep = ~transit_mask(t, cpu["period"], 2 * cpu["duration"], cpu["t0"])
        t, y, dy = t[keep], y[keep], None if dy is None else dy[keep]
    return rows, arrays


def searches(backend, cache_dir, threads, tls_default=False):
    """The searches of a case, warmed up; ``backend`` None: CPU TLS on both sides
    (only fills the cache, ``python -m validation.tlscache fill``)."""
    cpu = runs.TLSCache(cache_dir, use_threads=threads)
    sides = {"backend": cpu if backend is None else runs.side_under_test(backend), "cpu": cpu}
    if tls_default:
        sides["tlsdefault"] = runs.TLSCache(cache_dir, use_threads=threads,
                                            runner=runs.tls_default_runner())
    uncached = [functools.partial(side.search, use_threads=threads) if isinstance(side, runs.TLSCache)
                else side for side in dict.fromkeys(sides.values())]
    runs.warm_up(*uncached)
    return sides


_WORKER_SIDES = {}


def _load_sides(backend, cache_dir, threads, tls_default):
    """Where cases run: their searches, warmed up once."""
    _WORKER_SIDES.clear()
    _WORKER_SIDES.update(searches(backend, cache_dir, threads, tls_default))


def _work(case):
    return run_case(case, _WORKER_SIDES)


class Journal:
    """Finished cases of one run: per case, its rows and arrays (``store.RecordDir``)."""

    def __init__(self, directory):
        self.records = store.RecordDir(directory)
        self.directory = self.records.directory

    def done(self, case_id):
        return self.records.load(case_id) is not None  # an unreadable record is redone

    def save(self, case_id, rows, arrays):
        self.records.save(case_id, {"rows": rows}, arrays)

    def load(self, case_id):
        record = self.records.load(case_id)
        return (None, None) if record is None else (record[0]["rows"], record[1])

    def clear(self):
        self.records.clear()


def execute(pending, journal, jobs, progress, backend, cache_dir, threads, tls_default):
    """Run the pending cases (in ``jobs`` processes) and journal each as it finishes."""
    if jobs > 1 and pending:
        # numba's on-disk cache is written here, once: workers compiling the same cached
        # functions at once corrupted it (a segfault in TLS's interpolation gufunc)
        searches(None if backend is None else "cpu", cache_dir, threads, tls_default)

    def done(case, result):
        journal.save(case.id, *result)
        progress.update()

    processes.run_tasks(pending, _work, done, jobs, threads, _load_sides,
                        (backend, cache_dir, threads, tls_default))


def collect(case_list, journal):
    """(table, example): all journaled rows of the cases, and the arrays of the example case."""
    import pandas as pd

    rows, example, best = [], None, None
    for case in case_list:
        case_rows, arrays = journal.load(case.id)
        if case_rows is None:
            continue
        rows.extend(case_rows)
        first = case_rows[0]
        rank = (case.kind == "real", first["cpu_sde"] if np.isfinite(first["cpu_sde"]) else -1.0)
        if arrays and (best is None or rank > best):  # prefer a real curve, then the highest SDE
            best = rank
            example = dict(arrays=arrays, title=f"{case.id}: {first['target']}")
    return pd.DataFrame(rows), example


def parse_args(argv):
    p = argparse.ArgumentParser(prog="python -m validation.recover", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--backend", default="auto",
                   help="registered backend name, 'auto' (default) or a peer ('peer:gtls', 'peer:cetra')")
    p.add_argument("--suite", default="quick", choices=suites.SUITES)
    p.add_argument("--jobs", type=int, default=1, help="cases run in parallel processes")
    p.add_argument("--limit", type=int, default=None, help="run only the first N cases")
    p.add_argument("--seed", type=int, default=0, help="seed of every random draw of the suite")
    p.add_argument("--out", type=Path, default=outputs.default_out(), help=outputs.HELP)
    p.add_argument("--margin", type=float, default=0.02,
                   help="allowed detection shortfall vs CPU TLS, fraction of searches (default 0.02)")
    p.add_argument("--threads", type=int, default=None,
                   help="CPU threads per CPU TLS search (default: cores / jobs)")
    p.add_argument("--tls-default", action="store_true",
                   help="also run transitleastsquares' default backend (columns tlsdefault_*)")
    p.add_argument("--fresh", action="store_true", help="discard this run's journal and start over")
    args = p.parse_args(argv)
    if args.jobs < 1 or (args.limit is not None and args.limit < 1) or not 0 <= args.margin < 1:
        p.error("--jobs and --limit must be >= 1 and --margin in [0, 1)")
    return args


def main(argv=None):
    args = parse_args(argv)
    from backends.registry import BackendUnavailable

    try:
        backend = runs.resolve(args.backend)
    except (ValueError, BackendUnavailable) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    case_list = suites.suite(args.suite, args.seed)[: args.limit]
    extra = "-tlsdefault" if args.tls_default else ""
    journal = Journal(Path(args.out) / "cache" / "runs"
                      / f"{args.suite}-{outputs.label(backend)}-seed{args.seed}{extra}")
    with processes.interruptible():
        try:
            return run(args, backend, case_list, journal)
        except KeyboardInterrupt:
            done = sum(journal.done(c.id) for c in case_list)
            print(f"\ninterrupted: {done}/{len(case_list)} cases saved in {journal.directory}; "
                  "run the same command again to resume", file=sys.stderr)
            return processes.INTERRUPTED


def run(args, backend, case_list, journal):
    """The cases not yet journaled, then the reports; the exit status."""
    from tqdm import tqdm

    out = Path(args.out)
    if args.fresh:
        journal.clear()
    pending = [c for c in case_list if not journal.done(c.id)]
    threads = args.threads or max(1, (os.cpu_count() or 1) // args.jobs)
    print(f"suite {args.suite}: {len(case_list)} cases, backend {backend!r} "
          f"(asked: {args.backend!r}) vs CPU TLS '{runs.TLS_RUNNER}'; "
          f"{len(case_list) - len(pending)} already done in {journal.directory}", file=sys.stderr)
    with tqdm(total=len(case_list), initial=len(case_list) - len(pending), unit="case",
              file=sys.stderr) as progress:
        try:
            execute(pending, journal, args.jobs, progress, backend, out / "cache" / "tls", threads,
                    args.tls_default)
        except processes.WorkerDied as exc:
            print(f"\nerror: {exc}", file=sys.stderr)
            return 3

    table, example = collect(case_list, journal)
    print(report.console_table(table))
    stem = f"recover_{args.suite}_{outputs.label(backend)}"
    header = dict(backend=backend, suite=args.suite, seed=args.seed, cases=len(case_list),
                  searches=len(table), reference=f"transitleastsquares power(backend='{runs.TLS_RUNNER}')",
                  device=table["device"].dropna().iloc[0] if table["device"].notna().any() else "",
                  cpu_from_cache=f"{int(table['cpu_cached'].sum())}/{len(table)} searches "
                                 "(runtimes as measured when first computed)")
    md = report.write(table, example, out, stem, header)
    print(report.markdown_table(metrics.summary_by_snr(table)))
    for key, value in report.overall(table).items():
        print(f"  {key}: {value}")
    ok, reasons = metrics.verdict(table, args.margin)
    print(f"report: {md}")
    for reason in reasons:
        print(f"FAIL: {reason}", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
