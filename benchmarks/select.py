"""``python -m benchmarks.select``: the per-GPU variant table.

Sweeps ndata x nperiods (the benchmark cases) over every exact backend that
runs here, timing warm ``backend.search`` (best of ``--repeat``, device
synchronised) -- or, with ``--asv MACHINE``, reads the median warm end-to-end
times of that machine's newest asv results (``EndToEnd.time_search_warm``, the
whole grid without timing anything again) -- and writes the package data
``backends/data/variants/<gpu>.json`` (installed with the package): per regime
the fastest backend, every time and the margin (runner-up time / fastest
time), plus a ranking that ``backend="auto"`` follows on this GPU model
(``backends.variants``); and the human report ``reports/variants/<gpu>.md``.
The README's table between the markers ``<!-- variants-table <gpu slug> -->``
and ``<!-- /variants-table -->`` is replaced by the new one when the marker
names this GPU (the README shows one model's; the others are in their reports).
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import sys
import time

from benchmarks import REPO
from benchmarks.cases import NDATA, NPERIODS, case, runnable_backend

END_MARKER = "<!-- /variants-table -->"
ASV_BENCHMARK = "bench_search.EndToEnd.time_search_warm"


def candidates(here=True):
    """Exact backends (the slow ``reference`` oracle aside): those that can run
    here, or all (the ones timed elsewhere, read from asv results)."""
    from backends.registry import available_backends, backend_class, backend_names

    why = available_backends()
    return [name for name in backend_names()
            if (why[name] is None or not here) and name != "reference" and backend_class(name).exact]


def best_time(name, ndata, nperiods, repeat):
    """Best warm wall time [s] of ``backend.search`` on a case, or None when
    the case is over the backend's work budget."""
    try:
        backend = runnable_backend(name, ndata, nperiods)
    except NotImplementedError:
        return None
    c = case(ndata, nperiods)
    backend.search(c.plan, c.periods[:64])  # compile, allocate
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        backend.search(c.plan, c.periods)
        backend.synchronize()
        times.append(time.perf_counter() - start)
    return min(times)


def regime(ndata, nperiods, seconds):
    """A table row: the fastest backend and its margin over the runner-up."""
    order = sorted((t, name) for name, t in seconds.items() if t is not None)
    row = {"ndata": ndata, "nperiods": nperiods, "seconds": seconds,
           "fastest": order[0][1] if order else None}
    if len(order) > 1:
        row["runner_up"] = order[1][1]
        row["margin"] = order[1][0] / order[0][0]
    return row


def ranking(rows):
    """Backends by regimes won, then by the geometric mean of their time over
    the fastest one's in the regimes they ran."""
    names = {name for row in rows for name, t in row["seconds"].items() if t is not None}

    def key(name):
        wins = sum(row["fastest"] == name for row in rows)
        ratios = [row["seconds"][name] / row["seconds"][row["fastest"]]
                  for row in rows if row["seconds"].get(name) is not None]
        return -wins, math.exp(sum(map(math.log, ratios)) / len(ratios))

    return sorted(names, key=key)


def markdown(table) -> str:
    lines = [f"Fastest exact backend per regime on **{table['gpu']}** "
             f"({table['timing']}, measured {table['measured']}):", "",
             "| ndata | nperiods | fastest | time [s] | runner-up | margin |",
             "|---:|---:|---|---:|---|---:|"]
    for row in table["regimes"]:
        if row["fastest"] is None:
            continue
        best = row["seconds"][row["fastest"]]
        margin = f"{row['margin']:.2f}x" if "margin" in row else "-"
        lines.append(f"| {row['ndata']:,} | {row['nperiods']:,} | `{row['fastest']}` | "
                     f"{best:.4g} | {row.get('runner_up', '-')} | {margin} |")
    lines += ["", "`backend=\"auto\"` on this GPU takes first the backend fastest in total over the "
              "rows of the nearest ndata, then: " + ", ".join(f"`{name}`" for name in table["ranking"])]
    return "\n".join(lines)


def markers(gpu) -> tuple:
    """The README markers around ``gpu``'s variant table."""
    from backends.variants import slug

    return f"<!-- variants-table {slug(gpu)} -->", END_MARKER


def update_readme(path, text, gpu) -> bool:
    """Replace ``gpu``'s variant table in the README between its markers
    (False if absent: no table, or another GPU's)."""
    if not os.path.exists(path):
        return False
    with open(path) as f:
        readme = f.read()
    begin = markers(gpu)[0]
    start = readme.find(begin)
    end = readme.find(END_MARKER, start)
    if start < 0 or end < 0:
        return False
    readme = readme[:start + len(begin)] + "\n" + text + "\n" + readme[end:]
    with open(path, "w") as f:
        f.write(readme)
    return True


def sweep(ndata, nperiods, repeat, names):
    """{(ndata, nperiods): {backend: best warm seconds or None}}, timed here."""
    out = {}
    for n in ndata:
        for p in nperiods:
            seconds = out[(n, p)] = {name: best_time(name, n, p, repeat) for name in names}
            print(f"{n:>7} x {p:>7}: " + ", ".join(
                f"{k} {v:.4g}s" for k, v in seconds.items() if v is not None), flush=True)
    return out


def from_asv(machine_dir, names):
    """{(ndata, nperiods): {backend: median warm seconds or None}} from the
    newest asv result set of a machine (exact backends only)."""
    from benchmarks.figure import newest_results, series

    measured = series(newest_results(machine_dir), ASV_BENCHMARK)
    cases = sorted({(n, p) for _, n, p in measured})
    return {(n, p): {name: measured.get((name, n, p)) for name in names} for n, p in cases}


def table(gpu, seconds, timing, cpu_count=None):
    """The variant table; ``cpu_count``: cores of the machine that timed (None: unknown)."""
    rows = [regime(n, p, times) for (n, p), times in sorted(seconds.items())]
    return {"gpu": gpu, "measured": datetime.date.today().isoformat(),
            "cpu_count": cpu_count, "timing": timing, "regimes": rows,
            "ranking": ranking(rows)}


def main(argv=None):
    from backends import variants

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ndata", type=int, nargs="+", default=NDATA)
    parser.add_argument("--nperiods", type=int, nargs="+", default=NPERIODS)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--backends", nargs="+", help="default: every exact backend that runs here")
    parser.add_argument("--gpu", help="GPU name to file the table under (default: this GPU)")
    parser.add_argument("--asv", metavar="MACHINE",
                        help="read the times from this asv machine's newest results instead")
    parser.add_argument("--results", default=os.path.join(REPO, "reports", "asv", "results"))
    parser.add_argument("--out", default=variants.DEFAULT_DIR, help="the JSON table's folder "
                        "(default: the package's, backends/data/variants)")
    parser.add_argument("--report", default=os.path.join(REPO, "reports", "variants"),
                        help="the markdown table's folder (default: reports/variants)")
    parser.add_argument("--readme", default=os.path.join(REPO, "README.md"))
    args = parser.parse_args(argv)

    gpu = args.gpu or variants.gpu_name()
    if gpu is None:
        parser.error("no CUDA GPU here (give --gpu NAME to file a table anyway)")
    names = args.backends or candidates(here=not args.asv)
    if args.asv:
        machine_dir = os.path.join(args.results, args.asv)
        seconds = from_asv(machine_dir, names) if os.path.isdir(machine_dir) else {}
        if not seconds:
            parser.error(f"no {ASV_BENCHMARK} results for machine {args.asv}")
        table_ = table(gpu, seconds, "median warm `backends.search`, asv")
    else:
        seconds = sweep(args.ndata, args.nperiods, args.repeat, names)
        table_ = table(gpu, seconds, f"best of {args.repeat} warm `backend.search`", os.cpu_count())
    os.makedirs(args.out, exist_ok=True)
    os.makedirs(args.report, exist_ok=True)
    path = variants.table_path(gpu, args.out)
    with open(path, "w") as f:
        json.dump(table_, f, indent=1)
    text = markdown(table_)
    with open(os.path.join(args.report, variants.slug(gpu) + ".md"), "w") as f:
        f.write(text + "\n")
    print(text)
    print(f"wrote {path}" + (f"; updated {args.readme}" if update_readme(args.readme, text, gpu) else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
