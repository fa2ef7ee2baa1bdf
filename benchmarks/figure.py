"""``python -m benchmarks.figure``: the scaling figure from a machine's asv results.

Two log-log panels: warm end-to-end time against ndata (at one nperiods)
and against nperiods (at one ndata), one line per backend
(``EndToEnd.time_search_warm``) and per peer (``Peers.time_peer``).
"""

from __future__ import annotations

import argparse
import ast
import itertools
import json
import os
import sys

from benchmarks import REPO

SERIES = {"bench_search.EndToEnd.time_search_warm": "", "bench_peers.Peers.time_peer": "peer "}


def newest_results(machine_dir):
    """The newest result set (by asv's recorded date) of a machine."""
    sets = []
    for name in os.listdir(machine_dir):
        if name.endswith(".json") and name != "machine.json":
            with open(os.path.join(machine_dir, name)) as f:
                sets.append(json.load(f))
    if not sets:
        raise FileNotFoundError(f"no asv results in {machine_dir}")
    return max(sets, key=lambda d: d["date"])


def series(results, key):
    """{(first parameter, ndata, nperiods): value} of benchmark ``key`` in a
    result set, skipped and failed cases left out."""
    if key not in results["results"]:
        return {}
    values, params = results["results"][key][:2]
    return {(ast.literal_eval(name), int(ndata), int(nperiods)): value
            for value, (name, ndata, nperiods) in zip(values, itertools.product(*params))
            if value is not None and value == value}


def timings(results):
    """{(label, ndata, nperiods): seconds} of the series in one result set."""
    return {(prefix + name, ndata, nperiods): value
            for key, prefix in SERIES.items()
            for (name, ndata, nperiods), value in series(results, key).items()}


def plot(data, path, title, ndata_fixed, nperiods_fixed):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    labels = sorted({label for label, _, _ in data})
    for ax, axis, fixed in ((axes[0], 1, nperiods_fixed), (axes[1], 2, ndata_fixed)):
        for label in labels:
            points = sorted((key[axis], t) for key, t in data.items()
                            if key[0] == label and key[3 - axis] == fixed)
            if points:
                ax.loglog(*zip(*points), marker="o", ms=4, label=label,
                          ls="--" if label.startswith("peer ") else "-")
        ax.set_xlabel("ndata" if axis == 1 else "nperiods")
        ax.set_ylabel("warm wall time [s]")
        ax.set_title(f"{'nperiods' if axis == 1 else 'ndata'} = {fixed:,}")
        ax.grid(True, which="both", alpha=0.3)
    axes[1].legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("machine", help="asv machine name (a folder of reports/asv/results)")
    parser.add_argument("--results", default=os.path.join(REPO, "reports", "asv", "results"))
    parser.add_argument("--ndata", type=int, default=4320, help="ndata of the nperiods panel")
    parser.add_argument("--nperiods", type=int, default=10000, help="nperiods of the ndata panel")
    parser.add_argument("--out", default=os.path.join(REPO, "reports", "scaling.png"))
    args = parser.parse_args(argv)
    machine_dir = os.path.join(args.results, args.machine)
    if not os.path.isdir(machine_dir):
        parser.error(f"no asv results for machine {args.machine!r} in {args.results}")
    data = timings(newest_results(machine_dir))
    if not data:
        parser.error(f"no end-to-end or peer timings for {args.machine}")
    plot(data, args.out, f"TLS scaling on {args.machine}", args.ndata, args.nperiods)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
