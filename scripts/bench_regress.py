"""CI regression check of the committed asv results.

For every machine under ``reports/asv/results`` -- one per GPU model,
``gpu-<model>`` (``scripts/gpu_bench.sh`` files each device run under its
GPU's name, e.g. ``gpu-nvidia-h200``, ``gpu-nvidia-h100-80gb-hbm3``) --
compare its two newest result sets (by the date asv
recorded) with asv's own comparison: ``asv compare --factor F --split``,
which calls a change a regression only when it exceeds the factor and the
confidence intervals of the two measurements do not overlap. Exits 1 naming
each benchmark that got slower (or started failing); a machine with fewer
than two result sets has nothing to compare and passes. The peers
(``bench_peers``: CPU transitleastsquares, BLS, GTLS, CETRA) are other
packages timed beside ours for comparison: their times move with the
device machine's host (CPU TLS 1.15-1.44x between two H200 instances), not
with this code, so they are reported, not counted. So is a regression
between two given result sets that was re-timed on the device and recorded,
with its verdict, in ``benchmarks/acknowledged_regressions.toml``. For the
counted ``EndToEnd`` ones it prints the device command that re-times them
against the old commit (``scripts/asv_retime.py``).

    python scripts/bench_regress.py [--factor 1.10] [--results DIR] [--acknowledged FILE]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import sys
import tomllib

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PEERS = "bench_peers."  # benchmarks of other packages: reported, not counted
ACKNOWLEDGED = os.path.join(REPO, "benchmarks", "acknowledged_regressions.toml")
END_TO_END = re.compile(r"bench_search\.EndToEnd\.time_search_warm\('(\w+)', (\d+), (\d+)\)")


def result_sets(machine_dir):
    """(date, commit hash) of each result set of a machine, newest first."""
    sets = set()
    for name in os.listdir(machine_dir):
        if name.endswith(".json") and name != "machine.json":
            with open(os.path.join(machine_dir, name)) as f:
                data = json.load(f)
            sets.add((data["date"], data["commit_hash"]))
    return sorted(sets, reverse=True)


def regressions(conf, machine, old, new, factor):
    """Benchmarks asv marks worse ('+' slower, '!' newly failing) from old to new."""
    from asv.commands.compare import Compare

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        Compare.print_table(conf, old, new, factor=factor, split=True, machine=machine,
                            only_changed=True, commit_names={})
    worse = []
    for line in out.getvalue().splitlines():  # "| + | before | after | ratio | name |"
        fields = [field.strip() for field in line.strip().strip("|").split("|")]
        if len(fields) == 5 and fields[0] in ("+", "!"):
            mark, before, after, ratio, name = fields
            worse.append(f"{name}: {before} -> {after} (x{ratio})")
    return worse


def ours(line) -> bool:
    """Whether a regression line names one of this workbench's benchmarks, not a peer's."""
    return not line.startswith(PEERS)


def acknowledged(path) -> set:
    """(machine, old, new, benchmark) of each recorded regression (commits: 8 hex digits)."""
    if not os.path.exists(path):
        return set()
    with open(path, "rb") as f:
        entries = tomllib.load(f).get("regression", [])
    return {(e["machine"], e["old"][:8], e["new"][:8], e["benchmark"]) for e in entries}


def retime_command(old, names) -> str | None:
    """The device command re-timing the ``EndToEnd`` benchmarks among ``names``
    in the working tree and in commit ``old`` (``scripts/asv_retime.py``'s
    cases), or None where there are none."""
    cases = [":".join(m.groups()) for m in map(END_TO_END.fullmatch, names) if m]
    if not cases:
        return None
    return (f"rm -rf _ab && mkdir _ab && git archive {old[:8]} backends scripts datasets validation benchmarks "
            f"tests pyproject.toml | tar -x -C _ab   # then, on the device with .whl and _ab carried:\n"
            f"    python3 scripts/asv_retime.py --trees . _ab . --cases {' '.join(cases)}")


def check(results_dir, factor, known=frozenset()):
    """Messages naming each regression, over every machine in ``results_dir``,
    less those in ``known`` (``acknowledged``'s) for the same pair of sets."""
    from asv.config import Config

    conf = Config.load(os.path.join(REPO, "asv.conf.json"))
    conf.results_dir = os.path.abspath(results_dir)
    messages = []
    for machine in sorted(os.listdir(results_dir)):
        path = os.path.join(results_dir, machine)
        if not os.path.isdir(path):
            continue
        sets = result_sets(path)
        if len(sets) < 2:
            print(f"{machine}: {len(sets)} result set(s), nothing to compare")
            continue
        (_, new), (_, old) = sets[:2]
        worse = regressions(conf, machine, old, new, factor)
        mine = [line for line in worse if ours(line)]
        counted = [line for line in mine if (machine, old[:8], new[:8], line.split(": ")[0]) not in known]
        peers, recorded = len(worse) - len(mine), len(mine) - len(counted)
        print(f"{machine}: {old[:8]} -> {new[:8]}: {len(counted)} regression(s)"
              + (f" ({peers} peer timing(s) slower, not counted)" if peers else "")
              + (f" ({recorded} recorded with a verdict in {os.path.basename(ACKNOWLEDGED)}, not counted)"
                 if recorded else ""))
        command = retime_command(old, [line.split(": ")[0] for line in counted])
        if command:
            print(f"  re-time: {command}")
        messages += [f"{machine}: {line}" for line in counted]
    return messages


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--factor", type=float, default=1.10)
    parser.add_argument("--results", default=os.path.join(REPO, "reports", "asv", "results"))
    parser.add_argument("--acknowledged", default=ACKNOWLEDGED)
    args = parser.parse_args(argv)
    if not os.path.isdir(args.results):
        print(f"no committed asv results under {args.results}")
        return 0
    messages = check(args.results, args.factor, acknowledged(args.acknowledged))
    for message in messages:
        print(f"REGRESSION {message}", file=sys.stderr)
    return 1 if messages else 0


if __name__ == "__main__":
    sys.exit(main())
