"""The summary of ``scripts/gpu_throughput.sh``'s results (a folder with
``header.txt``, ``throughput_<backend>.json``, ``survey/scaling.md``,
``scaling/scaling.md``), in Markdown for ``reports/host_path/``: per backend
the packed and end-to-end rates and the host's CPU ms per light curve against
issue 13's targets; the survey's and the scaling runs' tables (rate, GPU use,
peak memory, cost: ``scripts/multigpu_scaling.py``'s).

    python scripts/host_path_report.py DIR > summary.md
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def _ok(met) -> str:
    return "met" if met else "**not met**"


def throughput_table(reports) -> list:
    lines = ["| backend | packed statistics [lc/s] | end to end, full [lc/s] | lean [lc/s] | end to end / packed "
             "| host, full [ms/lc] | host, lean [ms/lc] | CPU probes [us] | of it: plan, statistics (lean) [ms/lc] "
             "| CPU TLS default [lc/s] |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in reports:
        w = r["workers"][0]
        host, targets = r["host"], r["targets"]
        lines.append(
            f"| `{r['backend']}` | {r['search_many']['curves_per_s_warm']:.1f} | "
            f"{r[f'batch_w{w}']['curves_per_s_warm']:.1f} | {r[f'lean_w{w}']['curves_per_s_warm']:.1f} | "
            f"{targets['end_to_end_over_packed']:.2f} ({_ok(targets['end_to_end_met'])}) | "
            f"{host['full']['cpu_s_per_curve'] * 1e3:.2f} | {host['lean']['cpu_s_per_curve'] * 1e3:.2f} "
            f"({_ok(targets['host_met'])}) | {host['lean'].get('probe_us', float('nan')):.0f}, "
            f"{host['lean'].get('python_probe_us', float('nan')):.0f} | "
            f"{host['plan_cpu_s_per_curve'] * 1e3:.2f}, "
            f"{host['lean']['statistics_cpu_s_per_curve'] * 1e3:.2f} | "
            f"{r.get('tls_default_curves_per_s_warm', float('nan')):.1f} |")
    return lines


def summary(folder: Path) -> str:
    header = (folder / "header.txt").read_text().strip() if (folder / "header.txt").exists() else ""
    lines = ["# Host path and throughput (issue 13)", "", "```", header, "```", ""]
    reports = [json.loads(p.read_text()) for p in sorted(folder.glob("throughput_*.json"))]
    if reports:
        lines += ["## One process: packed statistics, end to end, host", "", *throughput_table(reports), "",
                  "Host: CPU time of `search_batch` per light curve with the statistics replayed "
                  "(`benchmarks.host_path`); target 2 ms (lean). CPU probes: a compute-only part of it "
                  "(`cpu_probe_us`) and a miniature of its interpreted part (`python_probe_us`) timed beside, the "
                  "core's speed at the time. End to end: `search_batch` with one host "
                  "thread; target 0.9 of the packed rate.", ""]
    for name, title in (("survey", "Survey: python -m validation.batch on one GPU"),
                        ("scaling", "Scaling: one and two GPUs")):
        path = folder / name / "scaling.md"  # scripts/multigpu_scaling.py's table
        if path.exists():
            lines += [f"## {title}", "", path.read_text().strip(), ""]
    return "\n".join(lines)


if __name__ == "__main__":
    print(summary(Path(sys.argv[1])))
