"""Re-time asv ``EndToEnd`` cases (``benchmarks.bench_search.search``) in
several source trees, one process per tree in the order given (``new old
new``: the machine's drift falls on both sides), to check a regression that
``scripts/bench_regress.py`` flagged between two result sets. Each process
times every case: one warm-up, then the warm median of ``--repeats`` (results
are host arrays, so each search has synchronised the device).

    python scripts/asv_retime.py --trees . _ab . --cases pruned:500:10000 cpu:4320:10000 [--repeats 15]
                                 [--out FILE.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path


def parse_case(spec: str) -> tuple[str, int, int]:
    """``"pruned:500:10000"`` -> ("pruned", 500, 10000)."""
    name, ndata, nperiods = spec.split(":")
    return name, int(ndata), int(nperiods)


def time_cases(cases, repeats) -> dict:
    """{case: (median s, min s)} of ``cases`` in the tree this process imports."""
    import importlib.util

    import numpy as np

    found = importlib.util.find_spec("benchmarks")  # where it would come from, before anything is imported
    source = Path(found.origin).resolve() if found and found.origin else None
    if source is None or not source.is_relative_to(Path.cwd().resolve()):
        elsewhere = f"it would import {source}" if source else "no benchmarks package is importable"
        raise SystemExit(f"{Path.cwd()} has no benchmarks.bench_search of its own ({elsewhere})")
    from benchmarks import bench_search

    search = bench_search.search
    out = {}
    for spec in cases:
        args = parse_case(spec)
        search(*args)
        seconds = []
        for _ in range(repeats):
            start = time.perf_counter()
            search(*args)
            seconds.append(time.perf_counter() - start)
        out[spec] = (float(np.median(seconds)), float(min(seconds)))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trees", nargs="+", default=[".", "_ab", "."])
    ap.add_argument("--cases", nargs="+", required=True, help="backend:ndata:nperiods")
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--out")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(time_cases(args.cases, args.repeats)))
        return 0
    runs = []
    for tree in args.trees:
        root = Path(tree).resolve()
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))}
        done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", "--repeats", str(args.repeats),
                               "--cases", *args.cases], cwd=root, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            sys.stderr.write(done.stderr)
            return done.returncode
        runs.append({"tree": tree, "times": json.loads(done.stdout.strip().splitlines()[-1])})
    width = max(map(len, args.cases))
    print(f"{'case':{width}s}  " + "  ".join(f"{r['tree']:>14s}" for r in runs) + "   (warm median ms)")
    for spec in args.cases:
        print(f"{spec:{width}s}  " + "  ".join(f"{r['times'][spec][0] * 1e3:14.2f}" for r in runs))
    if args.out:
        Path(args.out).write_text(json.dumps({"repeats": args.repeats, "runs": runs}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
