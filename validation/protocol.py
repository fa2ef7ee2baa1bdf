"""``python -m validation.protocol``: the calibrated detection protocol of a backend.

Per cadence (``protocol_cases``: K2 30-min, TESS 2-min, TESS 10-min FFI) three
sets of light curves: calibration nulls, injections (SNR, duration, impact
parameter incl. grazing, in white, red and real noise) and test nulls. The
backend searches every one. The reference column is CPU transitleastsquares
(``power(backend="fused")``, TLS's exact statistic; cached in OUT/cache/tls and
carried as ``validation.tlscache pack`` / ``unpack`` do) on the first
``--reference-subset`` items of each set, and an exact backend on the rest
(``--reference-backend``; default: the backend itself when exact, since exact
backends reproduce CPU TLS to 1e-7, else ``auto``, which picks only exact ones;
it searches the subset too, where its agreement with CPU TLS is reported).

The rule, fixed before any outcome (``validation.decision``): the SDE threshold
is the reference's 99th percentile over the calibration nulls; recovered =
SDE above it, period within 1 % and T0 within half a duration (integer aliases
not counted, flagged); false positive = a test null above it (a failed search
counts as a miss or a false positive); pass = recovery drop below 5 pp and
false-positive change within +-2 pp, both judged with simultaneous 95 %
Clopper-Pearson bounds on the paired differences.

Every finished chunk of searches is journaled (OUT/cache/protocol/<cadence>-
<column>-seed<seed>/), so a run stopped by Ctrl-C, a kill or ``--max-seconds``
resumes where it stopped; sizes may grow between runs (items are fixed by seed,
cadence, set and index). Then the report (``protocol_report``): markdown, CSV,
JSON with the sizes actually run, figures. Exit status: 0 pass, 1 fail, 2 bad
arguments, 3 a worker died, 4 incomplete (time budget: run again), 130
interrupted.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from backends import peers
from validation import outputs, processes, protocol_cases, runs
from validation.recover import Journal

VERSION = 2  # of the items and the journal: a change makes old journals refuse to mix in
SIZES = dict(calibration=1000, injections=1000, test=1000)
QUICK_SIZES = dict(calibration=3, injections=6, test=3)
QUICK_SUBSET = 1
REFERENCE_SUBSET = 100
TLS = f"tls-{runs.TLS_RUNNER}"  # the CPU TLS column's name
CHUNK, TLS_CHUNK = 20, 2  # searches per task (and journal record): a backend's, CPU TLS's
INCOMPLETE = 4


@dataclass(frozen=True)
class Run:
    """What a protocol run computes and where it keeps it."""

    out: Path
    backend: str
    reference: str  # exact backend of the reference column beyond the CPU TLS subset
    cadences: tuple  # protocol_cases.Cadence
    sizes: dict  # set -> items
    subset: int  # items of each set with CPU TLS
    seed: int
    reference_only: bool = False  # only the CPU TLS column (to fill a cache to carry)

    @property
    def columns(self):
        """The searches' columns: backend, reference backend (if another), CPU TLS."""
        if self.reference_only:
            return (TLS,)
        return tuple(dict.fromkeys((self.backend, self.reference, TLS)))

    def wanted(self, column, set_name):
        n = self.sizes[set_name]
        return range(min(n, self.subset) if column == TLS else n)

    def journal(self, layout, column):
        journal = Journal(self.out / "cache" / "protocol" / f"{layout.name}-{column}-seed{self.seed}")
        journal.records.stamp(dict(version=VERSION, cadence=asdict(layout), column=column,
                                   seed=self.seed))
        return journal

    def results(self, layout, column):
        """{(set, index): row} of what the column's journal holds."""
        journal, found = self.journal(layout, column), {}
        for key in journal.records.keys():
            rows = journal.load(key)[0] or []
            found.update(((row["set"], row["index"]), row) for row in rows)
        return found

    def tasks(self):
        """(pending tasks, searches done): CPU TLS's first (the slowest), in chunks."""
        tasks, done = [], 0
        for column in sorted(self.columns, key=lambda c: c != TLS):
            for layout in self.cadences:
                found = self.results(layout, column)
                for set_name in protocol_cases.SETS:
                    missing = [i for i in self.wanted(column, set_name)
                               if (set_name, i) not in found]
                    done += len(self.wanted(column, set_name)) - len(missing)
                    size = TLS_CHUNK if column == TLS else CHUNK
                    tasks += [(column, layout.name, set_name, tuple(missing[k:k + size]), self.seed)
                              for k in range(0, len(missing), size)]
        return tasks, done


_SEARCHES = {}


def _scalars_only(search):
    """``search`` without its arrays: the protocol keeps scalars, so its journal stays small."""
    def run(*args, **kwargs):
        return search(*args, **kwargs)[0], {}
    return run


def load_searches(columns, cache_dir, threads):
    """Where tasks run: each column's search (one backend instance each), warmed up once."""
    _SEARCHES.clear()
    for column in columns:
        if column == TLS:
            _SEARCHES[column] = runs.TLSCache(cache_dir, use_threads=threads,
                                              search=_scalars_only(runs.tls_search))
            runs.warm_up(functools.partial(runs.tls_search, use_threads=threads))
        else:  # a peer runs in its own worker process, as in validation.recover
            _SEARCHES[column] = _scalars_only(runs.side_under_test(column, lean=True))
            runs.warm_up(_SEARCHES[column])


def search_task(task):
    """Rows of one task: per item, its description and the column's outcome."""
    from backends.inputs import clean

    column, name, set_name, indices, seed = task
    layout, rows = protocol_cases.cadence(name), []
    for index in indices:
        item = protocol_cases.build(layout, set_name, index, seed)
        lc = clean(item.t, item.y, item.dy)
        scalars, _ = _SEARCHES[column](lc.t, lc.y, lc.dy, layout.options)
        rows.append(dict(item.info, **scalars, set=set_name, index=index, n_points=int(lc.t.size)))
    return rows


def execute(run, tasks, jobs, threads, deadline=None, progress=None):
    """Search the pending ``tasks`` (``run.tasks()``: what the journals lack) in
    ``jobs`` processes, journaling each chunk."""
    if not tasks:
        return
    journals = {(layout.name, column): run.journal(layout, column)
                for layout in run.cadences for column in run.columns}
    cache_dir = run.out / "cache" / "tls"
    if jobs > 1:  # compiled here once (numba's and the kernels' disk caches), not by every worker;
        # a peer compiles in its own worker process, which the parent would only hold idle
        load_searches([c for c in run.columns if not peers.is_peer(c)], cache_dir, threads)

    def done(task, rows):
        column, name, set_name, indices, _ = task
        journals[(name, column)].save(f"{set_name}-{indices[0]:06d}", rows, {})
        if progress is not None:
            progress.update(len(rows))

    processes.run_tasks(tasks, search_task, done, jobs, threads, load_searches,
                        (run.columns, cache_dir, threads), deadline)


def parse_args(argv):
    p = argparse.ArgumentParser(prog="python -m validation.protocol", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--backend", default="auto",
                   help="registered backend name, 'auto' (default) or a peer ('peer:gtls', 'peer:cetra')")
    p.add_argument("--cadence", default="all", choices=(*protocol_cases.CADENCES, "all"))
    p.add_argument("--calibration", type=int, help=f"calibration nulls per cadence ({SIZES['calibration']})")
    p.add_argument("--injections", type=int, help=f"injections per cadence ({SIZES['injections']})")
    p.add_argument("--test-nulls", type=int, dest="test", help=f"test nulls per cadence ({SIZES['test']})")
    p.add_argument("--reference-subset", type=int, dest="subset",
                   help=f"items of each set searched by CPU TLS ({REFERENCE_SUBSET})")
    p.add_argument("--reference-backend", help="exact backend of the reference column beyond the "
                   "subset (default: the backend itself if exact, else auto)")
    p.add_argument("--quick", action="store_true",
                   help=f"short light curves ({protocol_cases.QUICK['baseline']:g} d) and sizes "
                        f"{QUICK_SIZES}, subset {QUICK_SUBSET}: a smoke test, it cannot pass")
    p.add_argument("--jobs", type=int, default=1, help="searches in parallel processes")
    p.add_argument("--threads", type=int, help="CPU threads per CPU TLS search (default: cores / jobs)")
    p.add_argument("--max-seconds", type=float, help="stop after this long (journaled work kept; exit 4)")
    p.add_argument("--seed", type=int, default=0, help="seed of every item")
    p.add_argument("--out", type=Path, default=outputs.default_out(), help=outputs.HELP)
    p.add_argument("--report-only", action="store_true", help="only the report, from the journals")
    p.add_argument("--reference-only", action="store_true",
                   help="only CPU TLS on the subset (no backend, no report): a cache to carry "
                        "(python -m validation.tlscache pack)")
    p.add_argument("--fresh", action="store_true",
                   help="discard this run's journals (not the CPU TLS cache) and start over")
    args = p.parse_args(argv)
    defaults = QUICK_SIZES if args.quick else SIZES
    for set_name in protocol_cases.SETS:
        setattr(args, set_name, defaults[set_name] if getattr(args, set_name) is None
                else getattr(args, set_name))
    if args.subset is None:
        args.subset = QUICK_SUBSET if args.quick else REFERENCE_SUBSET
    if min(args.calibration, args.injections, args.test, args.jobs) < 1 or args.subset < 0:
        p.error("--calibration, --injections, --test-nulls and --jobs must be >= 1, "
                "--reference-subset >= 0")
    if args.threads is not None and args.threads < 1:
        p.error("--threads must be >= 1")
    if args.max_seconds is not None and args.max_seconds <= 0:
        p.error("--max-seconds must be positive")
    return args


def resolve(args):
    """(backend or peer, reference backend) names; ValueError or BackendUnavailable when unusable."""
    from backends.registry import backend_class, get_backend

    backend = runs.resolve(args.backend)
    exact = not peers.is_peer(backend) and backend_class(backend).exact
    reference = args.reference_backend
    if reference is None:
        reference = backend if exact else "auto"
    reference = get_backend(reference).name
    if not backend_class(reference).exact:
        raise ValueError(f"the reference backend must be exact; {reference!r} is approximate")
    return backend, reference


def main(argv=None):
    args = parse_args(argv)
    deadline = None if args.max_seconds is None else time.monotonic() + args.max_seconds
    from backends.registry import BackendUnavailable

    names = protocol_cases.CADENCES if args.cadence == "all" else (args.cadence,)
    try:
        backend, reference = (TLS, TLS) if args.reference_only else resolve(args)
        run = Run(Path(args.out), backend, reference,
                  tuple(protocol_cases.cadence(f"{n}-quick" if args.quick else n) for n in names),
                  {s: getattr(args, s) for s in protocol_cases.SETS}, args.subset, args.seed,
                  args.reference_only)
        if args.fresh and not args.report_only:
            for layout in run.cadences:
                for column in run.columns:
                    run.journal(layout, column).clear()
        tasks, done = run.tasks()  # also checks the journals hold this run's items
    except (ValueError, BackendUnavailable) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    status = 0
    if not args.report_only:
        status = search(run, args, tasks, done, deadline)
        if status in (processes.INTERRUPTED, 3) or args.reference_only:
            return INCOMPLETE if status == 0 and run.tasks()[0] else status
    from validation import protocol_report

    complete = not run.tasks()[0]
    path, passed = protocol_report.write(run, complete, argv if argv is not None else sys.argv[1:])
    print(f"report: {path}")
    if not complete:
        print("incomplete: run the same command again to resume", file=sys.stderr)
        return INCOMPLETE
    return 0 if passed else 1


def search(run, args, tasks, done, deadline):
    """Run the pending searches; 0, or the exit status of a run cut short."""
    from tqdm import tqdm

    threads = args.threads or max(1, (os.cpu_count() or 1) // args.jobs)
    total = done + sum(len(task[3]) for task in tasks)
    print(f"protocol: backend {run.backend!r}, reference CPU TLS '{runs.TLS_RUNNER}' on "
          f"{run.subset} items per set and {run.reference!r} beyond; cadences "
          f"{', '.join(c.name for c in run.cadences)}; sizes {run.sizes}; {done}/{total} "
          f"searches already journaled in {run.out / 'cache' / 'protocol'}", file=sys.stderr)
    with processes.interruptible(), tqdm(total=total, initial=done, unit="search",
                                         file=sys.stderr) as progress:
        try:
            execute(run, tasks, args.jobs, threads, deadline, progress)
        except KeyboardInterrupt:
            print("\ninterrupted: finished searches are kept; run the same command again "
                  "to resume", file=sys.stderr)
            return processes.INTERRUPTED
        except processes.WorkerDied as exc:
            print(f"\nerror: {exc}", file=sys.stderr)
            return 3
        except processes.OutOfTime:
            print(f"\nout of time after {args.max_seconds:g} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
