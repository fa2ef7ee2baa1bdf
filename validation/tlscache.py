"""``python -m validation.tlscache``: the CPU TLS cache of a suite as one carried file.

A GPU backend's suite needs CPU transitleastsquares on every case, which costs
far more than the GPU searches (core-hours for ``all``), so the CPU side is
computed once, anywhere, and shipped to the GPU machine:

    fill    run only CPU TLS on every search of a suite (in ``--jobs`` processes;
            resumable like ``validation.recover``; masked re-searches of multi-planet
            curves included, as they follow CPU TLS's own detections)
    pack    the cache in one compressed file: every record's scalars (what the
            metrics compare), arrays (periodogram, fold) only for the first search of
            each real light curve of the suite, the report's example candidates
    unpack  a pack into a cache folder, keeping the records already there
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

from datasets import real
from validation import cases as suites
from validation import outputs, processes, recover, runs, store

SEP = "__"  # between a record's key (hex) and an array's name in a pack


def cache_dir(out):
    return Path(out) / "cache" / "tls"


def expected_cost(case):
    """Relative CPU TLS cost of a case: points x span^1.3 (the period grid), x4 at long
    cadence (more durations per point); within 2x of the measured core-seconds."""
    p = case.params
    if case.kind == "synthetic":
        n, span, cadence = (p["ndata"] or p["baseline"] * 1440 / p["cadence_min"], p["baseline"],
                            p["cadence_min"])
    else:
        with np.load(real.DATA / f"{p['name']}.npz") as f:
            t = f["time"]
        n, span, cadence = t.size, np.ptp(t), np.median(np.diff(t)) * 1440
    return n * span**1.3 * (4 if cadence > 10 else 1)


def fill(suite, out, jobs=1, seed=0, limit=None):
    """Compute the CPU TLS records a suite lacks, biggest cases first (no straggler at
    the end); returns the journaled rows (a DataFrame)."""
    from tqdm import tqdm

    case_list = suites.suite(suite, seed)[:limit]
    journal = recover.Journal(Path(out) / "cache" / "runs" / f"{suite}-tls-seed{seed}")
    pending = sorted((c for c in case_list if not journal.done(c.id)), key=expected_cost,
                     reverse=True)
    threads = max(1, (os.cpu_count() or 1) // jobs)
    with tqdm(total=len(case_list), initial=len(case_list) - len(pending), unit="case",
              file=sys.stderr) as progress:
        recover.execute(pending, journal, jobs, progress, None, cache_dir(out), threads, False)
    return recover.collect(case_list, journal)[0]


def example_keys(case_list):
    """Cache keys of the first search of each real light curve in ``case_list``."""
    keys = set()
    for case in case_list:
        if case.kind == "real":
            lc = recover.cleaned_input(case)[1]
            keys.add(runs.cache_key(lc.t, lc.y, lc.dy, case.options))
    return keys


def pack(directory, path, keep_arrays=()):
    """Write every record of cache ``directory`` into the file ``path``; returns the count."""
    cache, records, arrays = store.RecordDir(directory), {}, {}
    for key in cache.keys():
        record = cache.load(key)
        if record is None:
            continue
        records[key] = record[0]
        if key in keep_arrays:
            arrays.update({f"{key}{SEP}{name}": value for name, value in record[1].items()})
    store.save(path, {"records": records}, arrays)
    return len(records)


def unpack(path, directory):
    """Write the records of pack ``path`` missing from cache ``directory``; returns their count."""
    found = store.load(path)
    if found is None or "records" not in found[0]:
        raise ValueError(f"{path} is not a CPU TLS cache pack")
    records, packed = found[0]["records"], found[1]
    cache, written = store.RecordDir(directory), 0
    for key, scalars in records.items():
        if cache.path(key).exists():
            continue
        arrays = {name.split(SEP, 1)[1]: value for name, value in packed.items()
                  if name.startswith(key + SEP)}
        cache.save(key, scalars, arrays)
        written += 1
    return written


def parse_args(argv):
    p = argparse.ArgumentParser(prog="python -m validation.tlscache", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    for name in ("fill", "pack", "unpack"):
        cmd = sub.add_parser(name)
        cmd.add_argument("--out", type=Path, default=outputs.default_out(),
                         help=f"the cache is OUT/cache/tls; {outputs.HELP}")
        if name == "unpack":
            cmd.add_argument("pack", help="file written by 'pack'")
            continue
        cmd.add_argument("--suite", default="all", choices=suites.SUITES)
        cmd.add_argument("--seed", type=int, default=0)
        if name == "fill":
            cmd.add_argument("--jobs", type=int, default=1)
            cmd.add_argument("--limit", type=int, default=None)
        else:
            cmd.add_argument("--to", required=True, help="the pack file to write")
    args = p.parse_args(argv)
    if args.command == "fill" and (args.jobs < 1 or (args.limit is not None and args.limit < 1)):
        p.error("--jobs and --limit must be >= 1")
    return args


def main(argv=None):
    args = parse_args(argv)
    if args.command == "unpack":
        try:
            written = unpack(args.pack, cache_dir(args.out))
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        print(f"unpacked {written} new CPU TLS records into {cache_dir(args.out)}")
        return 0
    if args.command == "pack":
        keys = example_keys(suites.suite(args.suite, args.seed))
        count = pack(cache_dir(args.out), args.to, keys)
        print(f"packed {count} CPU TLS records ({len(keys)} with arrays) into {args.to} "
              f"({Path(args.to).stat().st_size / 1e6:.2f} MB)")
        return 0
    try:
        with processes.interruptible():
            table = fill(args.suite, args.out, args.jobs, args.seed, args.limit)
    except KeyboardInterrupt:
        print("\ninterrupted: finished cases are kept; run the same command again to resume",
              file=sys.stderr)
        return processes.INTERRUPTED
    except processes.WorkerDied as exc:
        print(f"\nerror: {exc}", file=sys.stderr)
        return 3
    print(f"CPU TLS for suite {args.suite}: {table['case_id'].nunique()} cases, {len(table)} searches, "
          f"{table['cpu_runtime_s'].sum():.0f} s of CPU TLS (as first computed)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
