"""``python -m benchmarks.gate``: CI's benchmark gate, HEAD against its parent.

The parent commit is checked out beside the tree (``git worktree``). In each
tree the CI benchmarks (``SUITE``: host stages, ``backends.search`` with
``cpu`` and ``search_batch`` on small cases) run with asv, in the order base,
head, head, base, ... (``--rounds``: drift of the machine cancels), every
sample kept (``--append-samples``), and ``python -m benchmarks.counts``
collects the deterministic counts once. Then:

- a timing fails when its median over all samples is more than the
  threshold times the parent's, and so is its fastest sample (a burst of
  load on the machine slows some samples, a slower commit all of them); the
  threshold comes from the noise measured on this kind of machine
  (``reports/asv/ci_noise.json``, ``threshold``);
- a count fails when it differs from the parent's at all (or appears or
  disappears), unless this commit adds an entry to
  ``benchmarks/intended_changes.toml`` naming the metric with the same old
  and new values and a reason;
- a benchmark that fails in HEAD fails.

A timing over the threshold is measured again before it fails: only its
benchmarks, ``--confirm`` more rounds in both trees, and the fresh samples
decide (a burst of load on a shared CI machine slows one side's rounds: a
1.66x "slowdown" of an unchanged 85 us benchmark was seen once).

A parent without the CI benchmarks (or not in the clone) has nothing to
compare: HEAD's benchmarks still run, and the gate passes with a note.
``--noise N`` runs the gate of HEAD against itself N times and writes the
spread and the threshold it gives to ``reports/asv/ci_noise.{json,md}``.
Exit status 1 when the gate fails, 0 when it passes.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import tomllib
from dataclasses import dataclass, field

from benchmarks import REPO

SUITE = [r"^bench_stages\.HostStages\.", r"^bench_search\.EndToEnd\.time_search_warm\('cpu'",
         r"^bench_search\.Batch\..*\('cpu'\)"]
MARKER = os.path.join("benchmarks", "counts.py")  # a tree without it predates the gate
ALLOW_LIST = os.path.join("benchmarks", "intended_changes.toml")
NOISE = os.path.join(REPO, "reports", "asv", "ci_noise.json")
MACHINE = "ci-gate"
# the CI cases, each benchmark on one thread and timed by its process's CPU
# time: other processes on the machine (CI's may be shared) then change a
# measurement little
ENV = {"TLS_BENCH_SIZES": "ci", "NUMBA_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
       "TLS_BENCH_TIMER": "process"}
ABSENT = "absent"  # an allow-list value for a metric one side does not have
CONFIRM_ROUNDS = 4


def threshold_rule(ratios) -> float:
    """The slowdown factor that fails: twice the worst deviation from 1 seen
    between two runs of one commit (``ratios``: head/base medians), at least
    5 %, rounded up to whole percent."""
    worst = max(abs(math.log(r)) for r in ratios)
    return round(1 + math.ceil(100 * max(0.05, 2 * math.expm1(worst))) / 100, 2)


def git(*args) -> str:
    return subprocess.run(["git", "-C", REPO, *args], capture_output=True, text=True,
                          check=True).stdout.strip()


def commit_of(rev: str):
    """The full hash of ``rev``, or None where the clone does not have it."""
    try:
        return git("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
    except subprocess.CalledProcessError:
        return None


# ---- running -----------------------------------------------------------------------

def asv_config(tree: str, results: str, path: str) -> str:
    """An asv configuration that runs ``tree``'s benchmarks into ``results``."""
    with open(path, "w") as f:
        json.dump({"version": 1, "project": "tls-gpu-workbench", "repo": tree, "branches": ["HEAD"],
                   "dvcs": "git", "environment_type": "existing", "benchmark_dir": os.path.join(tree, "benchmarks"),
                   "results_dir": results, "html_dir": os.path.join(results, "html")}, f)
    return path


def run_asv(config: str, commit: str, log, suite=SUITE) -> None:
    """One asv run of ``suite`` (its samples appended to earlier rounds')."""
    command = [sys.executable, "-m", "asv", "run", "--config", config, "--python=same",
               "--machine", MACHINE, "--set-commit-hash", commit, "--append-samples",
               "--launch-method", "forkserver", "--show-stderr"]
    for regex in suite:
        command += ["-b", regex]
    done = subprocess.run(command, env={**os.environ, **ENV}, stdout=log, stderr=subprocess.STDOUT)
    if done.returncode not in (0, 2):  # 2: some benchmark failed, recorded in the results
        raise RuntimeError(f"asv run failed (exit {done.returncode}); see {log.name}")


def run_rounds(sides: dict, rounds: int, work: str, suite=SUITE) -> None:
    """Run every side's ``suite`` ``rounds`` times, in ABBA order; ``sides``:
    {label: (tree, commit)}, each into its own results directory."""
    os.makedirs(work, exist_ok=True)
    subprocess.run([sys.executable, "-m", "asv", "machine", "--yes", "--machine", MACHINE],
                   check=True, capture_output=True)
    labels = list(sides)
    with open(os.path.join(work, "asv.log"), "w") as log:
        for k in range(rounds):
            for label in labels if k % 2 == 0 else labels[::-1]:
                tree, commit = sides[label]
                config = asv_config(tree, os.path.join(work, label), os.path.join(work, f"{label}.json"))
                print(f"asv round {k + 1}/{rounds}: {label} ({commit[:8]})", flush=True)
                log.flush()
                run_asv(config, commit, log, suite)


def collect_counts(tree: str) -> dict:
    """``python -m benchmarks.counts`` of ``tree``."""
    done = subprocess.run([sys.executable, "-m", "benchmarks.counts"], cwd=tree, capture_output=True,
                          text=True, env={**os.environ, **ENV, "PYTHONPATH": tree})
    if done.returncode:
        raise RuntimeError(f"benchmarks.counts failed in {tree}:\n{done.stderr}")
    return json.loads(done.stdout)


# ---- reading and comparing ---------------------------------------------------------

@dataclass
class Timing:
    """One timed benchmark and parameter combination of one side."""

    version: str
    value: object  # seconds; None: failed; NaN: skipped
    samples: list


def load_timings(results: str) -> dict:
    """{display name: Timing} of the timings of the result set under ``results``."""
    from asv.results import iter_results

    out = {}
    for res in iter_results(os.path.join(results, MACHINE)):
        for key in res.get_all_result_keys():
            if not key.rsplit(".", 1)[-1].startswith("time_"):
                continue
            params = res.get_result_params(key)
            values = res.get_result_value(key, params)
            samples = res.get_result_samples(key, params)
            if not params:
                values, samples = [values], [samples]
            for combo, value, sample in zip(itertools.product(*params), values, samples):
                name = f"{key}({', '.join(combo)})" if combo else key
                out[name] = Timing(res.benchmark_version.get(key), value, sample or [value])
    return out


def ran(timing) -> bool:
    """Whether a timing was measured (not missing, failed or skipped)."""
    return timing is not None and timing.value is not None and timing.value == timing.value


def entries(text: str) -> list:
    return tomllib.loads(text).get("change", []) if text else []


def added_entries(base_commit: str) -> list:
    """Allow-list entries of this tree's file that the base commit's lacks."""
    path = os.path.join(REPO, ALLOW_LIST)
    with open(path) as f:
        head = f.read()
    try:
        base = git("show", f"{base_commit}:{ALLOW_LIST}")
    except subprocess.CalledProcessError:  # the parent has no allow-list yet
        base = ""
    old = entries(base)
    return [entry for entry in entries(head) if entry not in old]


@dataclass
class Verdict:
    failures: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    timings: list = field(default_factory=list)  # (name, base s, head s, ratio, status)
    counts: list = field(default_factory=list)  # (name, old, new, status), the changed ones
    same_counts: int = 0

    @property
    def passed(self) -> bool:
        return not self.failures


def ratios(base: Timing, head: Timing) -> tuple:
    """(median, fastest): head's samples over base's by their median and by
    their minimum. A timing is slower when both are over the threshold, so
    the smaller one decides."""
    return (statistics.median(head.samples) / statistics.median(base.samples),
            min(head.samples) / min(base.samples))


def compare_timings(verdict: Verdict, base, head: dict, threshold: float) -> None:
    """``base`` None: no parent to compare with, only HEAD's failures count."""
    for name in sorted(head):
        b, h = (base or {}).get(name), head[name]
        if h.value is None:
            verdict.failures.append(f"{name}: fails in HEAD (asv.log has its error)")
            verdict.timings.append((name, b and b.value, None, None, "FAILS"))
        elif base is None or h.value != h.value:
            continue  # nothing to compare with, or skipped in HEAD (asv: n/a), e.g. a GPU backend
        elif not ran(b):
            verdict.notes.append(f"{name}: not measured in the parent, nothing to compare")
        elif b.version != h.version:
            verdict.notes.append(f"{name}: the benchmark's code changed, not compared")
        else:
            old, new = statistics.median(b.samples), statistics.median(h.samples)
            median, fastest = ratios(b, h)
            slower = min(median, fastest) > threshold
            if slower:
                verdict.failures.append(f"{name}: {median:.3f}x the parent's time "
                                        f"({old:.4g} s -> {new:.4g} s; fastest samples {fastest:.3f}x; "
                                        f"threshold {threshold:.2f}x)")
            elif median > threshold:
                verdict.notes.append(f"{name}: median {median:.3f}x the parent's, fastest samples only "
                                     f"{fastest:.3f}x: some samples slowed, not all")
            verdict.timings.append((name, old, new, median, "SLOWER" if slower else "ok"))


def allow_entry(name: str, old, new) -> str:
    return (f"[[change]]\nmetric = {json.dumps(name)}\nold = {json.dumps(old)}\n"
            f"new = {json.dumps(new)}\nreason = \"...\"")


def compare_counts(verdict: Verdict, base: dict, head: dict, allowed: list) -> None:
    for name in sorted(set(base) | set(head)):
        old, new = base.get(name, ABSENT), head.get(name, ABSENT)
        if old == new:
            verdict.same_counts += 1
        elif any((e.get("metric"), e.get("old"), e.get("new")) == (name, old, new) for e in allowed):
            verdict.notes.append(f"{name}: {old} -> {new}, intended ({ALLOW_LIST})")
            verdict.counts.append((name, old, new, "intended"))
        else:
            verdict.failures.append(f"{name}: {old} -> {new}, not recorded as intended; if it is, "
                                    f"add to {ALLOW_LIST} in this commit:\n{allow_entry(name, old, new)}")
            verdict.counts.append((name, old, new, "CHANGED"))


def report(verdict: Verdict, title: str) -> str:
    def cell(v):
        return "-" if v is None else (f"{v:.4g}" if isinstance(v, float) else str(v))

    lines = [f"# {title}", "", "| timing | base [s] | head [s] | ratio | |", "|---|---:|---:|---:|---|"]
    lines += [f"| `{n}` | {cell(b)} | {cell(h)} | {cell(r)} | {s} |" for n, b, h, r, s in verdict.timings]
    lines += ["", f"{verdict.same_counts} deterministic counts the same as the parent's"
              + (", these not:" if verdict.counts else "")]
    lines += [f"- `{n}`: {o} -> {w} ({s})" for n, o, w, s in verdict.counts]
    lines += [""] + [f"- note: {n}" for n in verdict.notes] + [f"- FAIL: {f}" for f in verdict.failures]
    lines += ["", "PASS" if verdict.passed else "FAIL"]
    return "\n".join(lines)


# ---- the gate ------------------------------------------------------------------------

def noise_threshold(path=NOISE) -> float:
    with open(path) as f:
        return json.load(f)["threshold"]


@dataclass
class Run:
    """What the gate measured: per side ("base", "head") the timings and the
    counts; ``why`` says why there is no base (nothing to compare);
    ``first``: {timing: its first ratio} of the timings measured again."""

    why: object
    base_commit: object
    timings: dict
    counts: dict
    first: dict = field(default_factory=dict)


def measure(base_rev: str, rounds: int, work: str, threshold=None, confirm_rounds=CONFIRM_ROUNDS) -> Run:
    """Run the suite in the base commit's tree and in this one (with no base
    to compare with, this one's once) and collect each tree's counts; with a
    ``threshold``, measure the timings over it again (``confirm``)."""
    head_commit, base_commit = commit_of("HEAD"), commit_of(base_rev)
    if base_commit is None:
        why = f"{base_rev} is not in this clone"
    elif git("ls-tree", "--name-only", base_commit, "--", MARKER) != MARKER:
        why = f"{base_rev} ({base_commit[:8]}) predates the CI benchmarks"
    else:
        why = None
    sides = {"head": (REPO, head_commit)}
    base_tree = os.path.join(work, "base-tree")
    if why is None:
        git("worktree", "add", "--detach", "--force", base_tree, base_commit)
        sides = {"base": (base_tree, base_commit), **sides}
    try:
        run_rounds(sides, rounds if why is None else 1, work)
        counts = {side: collect_counts(tree) for side, (tree, _) in sides.items()}
        with open(os.path.join(work, "counts.json"), "w") as f:
            json.dump(counts, f, indent=1)
        run = Run(why, base_commit, {side: load_timings(os.path.join(work, side)) for side in sides}, counts)
        if threshold and why is None and confirm_rounds > 0:
            confirm(run, sides, threshold, confirm_rounds, os.path.join(work, "confirm"))
    finally:
        if why is None:
            git("worktree", "remove", "--force", base_tree)
    return run


def confirm(run: Run, sides: dict, threshold: float, rounds: int, work: str) -> None:
    """Measure the benchmarks of the timings over ``threshold`` again in both
    trees, ``rounds`` ABBA rounds, and put the fresh timings in ``run``."""
    scratch = Verdict()
    compare_timings(scratch, run.timings["base"], run.timings["head"], threshold)
    slower = {name: ratio for name, _, _, ratio, status in scratch.timings if status == "SLOWER"}
    if not slower:
        return
    print(f"{len(slower)} timing(s) over {threshold:.2f}x, measured again: {', '.join(slower)}", flush=True)
    run_rounds(sides, rounds, work, [f"^{re.escape(name)}$" for name in slower])  # asv: name(params)
    again = {side: load_timings(os.path.join(work, side)) for side in sides}
    lost = Timing(None, None, [None])  # asv wrote no result: a failure in HEAD, nothing decided in the parent
    run.timings = {side: {**run.timings[side], **{name: again[side].get(name, lost) for name in slower}}
                   for side in sides}
    run.first = slower


def judge(run: Run, threshold: float) -> Verdict:
    verdict = Verdict()
    if run.why is not None:
        verdict.notes.append(f"nothing to compare: {run.why}; HEAD's benchmarks ran and its "
                             f"{len(run.counts['head'])} counts were collected (counts.json); the gate "
                             "passes unless a benchmark fails")
        compare_timings(verdict, None, run.timings["head"], threshold)
        return verdict
    verdict.notes += [f"{name}: {ratio:.3f}x the parent's time at first; the table has the second "
                      "measurement, which decides" for name, ratio in run.first.items()]
    compare_timings(verdict, run.timings["base"], run.timings["head"], threshold)
    compare_counts(verdict, run.counts["base"], run.counts["head"], added_entries(run.base_commit))
    return verdict


def gate(base_rev: str, rounds: int, threshold: float, work: str, confirm_rounds=CONFIRM_ROUNDS) -> Verdict:
    return judge(measure(base_rev, rounds, work, threshold, confirm_rounds), threshold)


def measure_noise(repeats: int, rounds: int, work: str) -> dict:
    """The gate's measurement of HEAD against itself ``repeats`` times: every
    timing's ``ratios`` (head/base) by the median and by the minimum of all
    samples; the threshold ``threshold_rule`` derives from the smaller of the
    two, the statistic the gate decides on."""
    found, every = {"median": [], "min": []}, []
    for k in range(repeats):
        run = measure("HEAD", rounds, os.path.join(work, f"noise{k}"))
        base, head = run.timings["base"], run.timings["head"]
        pairs = {name: ratios(base[name], head[name])
                 for name in sorted(head) if ran(head[name]) and ran(base.get(name))}
        for stat, index in (("median", 0), ("min", 1)):
            found[stat].append({name: pair[index] for name, pair in pairs.items()})
        every += [min(pair) for pair in pairs.values()]
    return {"commit": commit_of("HEAD"), "cpu_count": os.cpu_count(), "repeats": repeats, "rounds": rounds,
            "env": ENV, "ratios": found, "worst": max(every, key=lambda r: abs(math.log(r))),
            "threshold": threshold_rule(every)}


def noise_markdown(noise: dict) -> str:
    """``ci_noise.json`` for people: each timing's A/A ratios, the rule, the threshold."""
    runs = noise["ratios"]
    lines = [f"# CI benchmark noise: commit {noise['commit'][:8]} against itself", "",
             f"`python -m benchmarks.gate --noise {noise['repeats']} --rounds {noise['rounds']}` on a "
             f"{noise['cpu_count']}-core machine of CI's kind (environment {noise['env']}): each of the "
             f"{noise['repeats']} runs benchmarks the commit in two trees, {noise['rounds']} asv runs each "
             "(ABBA), as the gate does. Ratio: head / base of the median (in brackets: of the minimum) "
             "of all samples.", "",
             "| timing | " + " | ".join(f"run {k + 1}" for k in range(noise["repeats"])) + " |",
             "|---|" + "---:|" * noise["repeats"]]
    for name in sorted(runs["median"][0]):
        lines.append(f"| `{name}` | " + " | ".join(
            f"{med[name]:.3f} ({low[name]:.3f})" for med, low in zip(runs["median"], runs["min"])) + " |")
    lines += ["", f"Worst of the smaller ratio of each pair: {noise['worst']:.3f}. Rule (`gate.threshold_rule`): "
              "the threshold is 1 + twice the worst deviation, at least 5 %, rounded up to whole percent: "
              f"**{noise['threshold']:.2f}x**; a timing of HEAD whose median and fastest sample are both "
              "slower than that times the parent's is measured again, and fails the gate if it still is."]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="HEAD^", help="the commit to compare with (default: the parent)")
    parser.add_argument("--rounds", type=int, default=2, help="asv runs per side, interleaved ABBA")
    parser.add_argument("--threshold", type=float, help=f"slowdown factor that fails (default: {NOISE})")
    parser.add_argument("--confirm", type=int, default=CONFIRM_ROUNDS,
                        help="asv runs per side that measure a timing over the threshold again")
    parser.add_argument("--out", default=os.path.join(REPO, ".asv", "gate"),
                        help="where each run's asv results, log, counts and report go")
    parser.add_argument("--noise", type=int, metavar="N",
                        help=f"measure: the gate of HEAD against itself N times, into {NOISE}")
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="run-", dir=args.out)
    if args.noise:
        noise = measure_noise(args.noise, args.rounds, work)
        with open(NOISE, "w") as f:
            json.dump(noise, f, indent=1)
        with open(NOISE[:-len(".json")] + ".md", "w") as f:
            f.write(noise_markdown(noise) + "\n")
        print(f"worst ratio {noise['worst']:.3f}, threshold {noise['threshold']:.2f}: wrote {NOISE}")
        return 0
    threshold = args.threshold or noise_threshold()
    verdict = gate(args.base, args.rounds, threshold, work, args.confirm)
    text = report(verdict, f"CI benchmark gate: HEAD against {args.base}, threshold {threshold:.2f}x")
    with open(os.path.join(work, "report.md"), "w") as f:
        f.write(text + "\n")
    print(text)
    print(f"asv log, results, counts: {work}")
    return 0 if verdict.passed else 1


if __name__ == "__main__":
    sys.exit(main())
