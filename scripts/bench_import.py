"""Bring asv results from the GPU machine into ``reports/asv/results``.

The device runs on a copy of the tree in a throwaway git repository, so its
new results carry a commit hash unknown here; such a result set is filed under
``COMMIT`` (the commit the device ran) instead, with its file name to match,
which ``asv publish`` and ``scripts/bench_regress.py`` need; a set already
filed under that commit gains the new benchmarks (one plan, several calls). Result sets of
commits known here (carried to the device from reports/, or run in a tree
with its .git) keep their commit; ``machine.json`` and the suite description
``benchmarks.json`` come along.

    python scripts/bench_import.py <results dir from the archive> <commit>
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def known(commit):
    """Whether ``commit`` is a commit of this repository."""
    return subprocess.run(["git", "-C", REPO, "cat-file", "-e", f"{commit}^{{commit}}"],
                          capture_output=True).returncode == 0


def missing(value) -> bool:
    return value is None or value != value  # asv writes NaN or null for what did not run


def merged_row(columns, old, new):
    """One benchmark's row: each parameter combination from ``new`` where it
    ran there, else from ``old`` (the columns of per-combination lists)."""
    pad = lambda row: list(row) + [None] * (len(columns) - len(row))  # noqa: E731 (asv drops empty tails)
    o, n = dict(zip(columns, pad(old))), dict(zip(columns, pad(new)))
    if not isinstance(n["result"], list):
        return new if not missing(n["result"]) else old
    keep = [missing(x) for x in n["result"]]
    for col, value in n.items():
        if col != "params" and isinstance(value, list) and len(value) == len(keep):
            before = o[col] if isinstance(o[col], list) else [None] * len(keep)
            n[col] = [before[i] if k else v for i, (k, v) in enumerate(zip(keep, value))]
    row = [n[c] for c in columns]
    while row and row[-1] is None:  # the empty tail dropped again, as asv writes it
        row.pop()
    return row


def merged(old, data):
    """``data`` with what the result set ``old`` (already filed under its
    name) has and it lacks, per benchmark and parameter combination: a plan
    run in several device calls files one result set per commit."""
    columns = data["result_columns"]
    results = dict(old.get("results", {}))
    for name, row in data.get("results", {}).items():
        results[name] = merged_row(columns, results[name], row) if name in results else row
    data["results"] = results
    data["durations"] = {**old.get("durations", {}), **data.get("durations", {})}
    return data


def import_results(source, commit, dest):
    """Copy every machine's new results from ``source`` to ``dest`` under
    ``commit``; returns the paths written (not those already there unchanged)."""
    written = []
    for machine in sorted(os.listdir(source)):
        src = os.path.join(source, machine)
        if not os.path.isdir(src):
            continue
        os.makedirs(os.path.join(dest, machine), exist_ok=True)
        for name in sorted(os.listdir(src)):
            if not name.endswith(".json"):
                continue
            with open(os.path.join(src, name)) as f:
                data = json.load(f)
            if name != "machine.json" and not known(data["commit_hash"]):
                data["commit_hash"] = commit
                name = f"{commit[:8]}-{name.split('-', 1)[1]}"
            path = os.path.join(dest, machine, name)
            if os.path.exists(path):
                with open(path) as f:
                    old = json.load(f)
                if old == data:  # a carried set, unchanged: left as committed
                    continue
                if name != "machine.json":
                    data = merged(old, data)
            with open(path, "w") as f:
                json.dump(data, f, indent=1)
            written.append(path)
    if os.path.exists(os.path.join(source, "benchmarks.json")):
        written.append(shutil.copy(os.path.join(source, "benchmarks.json"), dest))
    return written


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", help="reports/asv/results of the unpacked archive")
    parser.add_argument("commit", help="full hash of the commit the device ran")
    parser.add_argument("--dest", default=os.path.join(REPO, "reports", "asv", "results"))
    args = parser.parse_args(argv)
    if len(args.commit) != 40:
        parser.error("give the full 40-character commit hash")
    for path in import_results(args.source, args.commit, args.dest):
        print(f"wrote {os.path.relpath(path, REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
