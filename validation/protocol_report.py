"""The protocol's report: items scored with each cadence's threshold, the
decision, tables, figures and the sizes actually run, under OUT.

Files (stem ``protocol_<backend>[_<cadence>][_quick]``): ``.md`` (the rule, the
verdict per cadence, sizes, rates with their bounds, breakdowns, agreement with
CPU TLS on the subset, figures), ``.csv`` (one row per item and cadence),
``_summary.csv`` (one row per cadence), ``.json`` (sizes run, thresholds,
counts, bounds, verdicts, seed, versions, device), ``figures/<stem>_recovery_vs_snr.png``
and ``figures/<stem>_false_positives.png``.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import asdict

import numpy as np

from backends import frontend
from backends.peers.outcome import FIELDS
from validation import decision, metrics, outputs, protocol_cases
from validation.protocol import TLS
from validation.report import markdown_table, save_figure

OUTCOME = tuple(key for key in FIELDS if key != "fap")  # a search's outcome, as the report's columns
ITEM = ("noise", "source", "snr_design", "duration_factor", "grazing", "n_points",
        *(f"truth_{k}" for k in protocol_cases.TRUTH_FIELDS))
VERSIONS = (*frontend.SEARCH_PACKAGES, "scipy", "batman-package")


def labels(run):
    """Outcome columns of the table: backend, reference, CPU TLS, and the reference backend
    when it is another."""
    other = ("refbackend",) if run.reference != run.backend else ()
    return ("backend", "reference", "tls") + other


def table(run):
    """One row per item of every cadence: description, outcomes (NaN: not searched yet)."""
    import pandas as pd

    rows = []
    for layout in run.cadences:
        found = {column: run.results(layout, column) for column in run.columns}
        for set_name in protocol_cases.SETS:
            for index in run.wanted(run.backend, set_name):
                key = (set_name, index)
                in_subset = index < run.subset
                sides = dict(backend=found[run.backend].get(key),
                             tls=found[TLS].get(key) if in_subset else None,
                             refbackend=found[run.reference].get(key))
                sides["reference"] = sides["tls"] if in_subset else sides["refbackend"]
                described = next((s for s in sides.values() if s is not None), {})
                row = dict(cadence=layout.name, set=set_name, index=index,
                           reference_from=TLS if in_subset else run.reference,
                           **{k: described.get(k, math.nan) for k in ITEM},
                           device=(sides["backend"] or {}).get("device"))
                for label in labels(run):
                    outcome = sides[label] or {}
                    row.update({f"{label}_{k}": outcome.get(k, math.nan) for k in OUTCOME})
                row["complete"] = sides["backend"] is not None and sides["reference"] is not None
                rows.append(row)
    return pd.DataFrame(rows)


def thresholds(df):
    """cadence -> the reference's SDE threshold from its calibration nulls (NaN: none yet)."""
    out = {}
    for name, part in df[df["set"] == "calibration"].groupby("cadence", sort=False):
        try:
            out[name] = decision.threshold(part["reference_sde"])
        except ValueError:
            out[name] = math.nan
    return out


def score(df, run, limits):
    """``df`` with, per outcome column, detected (SDE above the cadence's threshold),
    recovered (injections), false_positive (test nulls; a failed search counts) and alias."""
    threshold = df["cadence"].map(limits).astype(float)
    injection, test = (df["set"] == "injections").to_numpy(), (df["set"] == "test").to_numpy()
    truths = df[["truth_period", "truth_t0", "truth_duration", "truth_depth_ppm"]].to_numpy()
    for label in labels(run):
        found = df[[f"{label}_{k}" for k in ("period", "t0", "duration", "depth_ppm", "sde")]]
        flags = [metrics.compare(dict(zip(("period", "t0", "duration", "depth_ppm", "sde"), f)),
                                 dict(zip(("period", "t0", "duration", "depth_ppm"), truth)))
                 if inj else {} for inj, f, truth in zip(injection, found.to_numpy(), truths)]
        detected = (df[f"{label}_sde"].astype(float) > threshold).to_numpy()
        failed = df[f"{label}_error"].notna().to_numpy()
        df[f"{label}_detected"] = detected
        df[f"{label}_recovered"] = detected & [f.get("recovered", False) for f in flags]
        df[f"{label}_alias"] = [f.get("alias", "") for f in flags]
        df[f"{label}_false_positive"] = test & (detected | failed)
    return df


def counts(part):
    """decision.Counts of one cadence's complete, scored rows."""
    inj = part[part["set"] == "injections"]
    nulls = part[part["set"] == "test"]
    ref_r, back_r = inj["reference_recovered"], inj["backend_recovered"]
    ref_f, back_f = nulls["reference_false_positive"], nulls["backend_false_positive"]
    return decision.Counts(
        injections=len(inj), reference_recovered=int(ref_r.sum()),
        backend_recovered=int(back_r.sum()), lost=int((ref_r & ~back_r).sum()),
        gained=int((back_r & ~ref_r).sum()), nulls=len(nulls), reference_fp=int(ref_f.sum()),
        backend_fp=int(back_f.sum()), extra=int((back_f & ~ref_f).sum()),
        fewer=int((ref_f & ~back_f).sum()))


def rates(df, by, flag, set_name, confidence=decision.CONFIDENCE):
    """Per cadence and value of ``by``: backend's and reference's rate of ``flag`` on
    ``set_name``, with Clopper-Pearson bounds simultaneous over the cadence's values and
    both columns (Bonferroni)."""
    import pandas as pd

    rows = []
    for name, part in df[(df["set"] == set_name) & df["complete"]].groupby("cadence", sort=False):
        groups = list(part.groupby(by, sort=True)) + ([("all", part)] if by == "noise" else [])
        alpha = (1 - confidence) / (2 * len(groups))
        for value, group in groups:
            for label in ("backend", "reference"):
                k, n = int(group[f"{label}_{flag}"].sum()), len(group)
                low, high = decision.clopper_pearson(k, n, alpha)
                rows.append(dict(cadence=name, **{by: value}, column=label, n=n, k=k, rate=k / n,
                                 low=low, high=high))
    return pd.DataFrame(rows)


def agreement(df, run):
    """Per cadence, on the CPU TLS subset: how often each column searched there decides
    as CPU TLS does, finds its period, and its largest relative SDE difference."""
    import pandas as pd

    rows = []
    for name, part in df[df["tls_sde"].notna()].groupby("cadence", sort=False):
        for label in ("backend", "refbackend"):
            if label not in labels(run):
                continue
            both = part[part[f"{label}_sde"].notna()]
            rel = (both[f"{label}_sde"] - both["tls_sde"]).abs() / both["tls_sde"].abs()
            period = (both[f"{label}_period"] / both["tls_period"] - 1).abs() < metrics.PERIOD_TOL
            same = both[f"{label}_detected"] == both["tls_detected"]
            rows.append(dict(cadence=name, column=run.reference if label == "refbackend"
                             else run.backend, searches=len(both), same_decision=int(same.sum()),
                             same_period=int(period.sum()),
                             max_sde_rel_diff=float(rel.max()) if len(both) else math.nan))
    return pd.DataFrame(rows)


def summarise(df, run, limits):
    """(one summary row per cadence, {cadence: Verdict})."""
    import pandas as pd

    rows, verdicts = [], {}
    for layout in run.cadences:
        part = df[df["cadence"] == layout.name]
        done = part[part["complete"]]
        c = counts(done)
        verdict = verdicts[layout.name] = decision.judge(c)
        own = done.loc[done["set"] == "calibration", "backend_sde"]
        rows.append(dict(
            cadence=layout.name, threshold=limits.get(layout.name, math.nan),
            backend_own_threshold=decision.threshold(own) if own.notna().any() else math.nan,
            complete=bool(part["complete"].all()),
            **{f"{s}_run": int((done["set"] == s).sum()) for s in protocol_cases.SETS},
            tls_searches=int(part["tls_sde"].notna().sum()),
            recovery_drop=verdict.recovery_drop, recovery_drop_upper=verdict.recovery_drop_upper,
            fpr_change=verdict.fpr_change, fpr_change_low=verdict.fpr_change_bounds[0],
            fpr_change_high=verdict.fpr_change_bounds[1], lost=c.lost, gained=c.gained,
            extra_fp=c.extra, fewer_fp=c.fewer,
            **{f"{name}{end}": value for name in decision.PROPORTIONS[:4]
               for end, value in zip(("", "_low", "_high"),
                                     (verdict.rates[name], *verdict.bounds[name]))},
            backend_median_s=float(part["backend_runtime_s"].median()),
            tls_median_s=float(part["tls_runtime_s"].median()),
            passed=verdict.passed and bool(part["complete"].all())))
    return pd.DataFrame(rows), verdicts


def figures(by_snr, fpr, directory, stem):
    """Recovery vs SNR with bands, false-positive rates with bounds; their paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    directory.mkdir(parents=True, exist_ok=True)
    paths = {}
    cadences = list(dict.fromkeys(by_snr["cadence"])) if len(by_snr) else []
    fig, axes = plt.subplots(1, max(1, len(cadences)), figsize=(4.2 * max(1, len(cadences)), 3.6),
                             squeeze=False)
    for ax, name in zip(axes[0], cadences):
        for label, color, line in (("reference", "k", "-"), ("backend", "C1", "--")):
            part = by_snr[(by_snr["cadence"] == name) & (by_snr["column"] == label)]
            ax.plot(part["snr_design"], part["rate"], marker="o", ls=line, color=color, label=label,
                    ms=3)
            ax.fill_between(part["snr_design"], part["low"], part["high"], color=color, alpha=0.15)
        ax.set(title=name, xlabel="expected SNR of the injection", ylim=(-0.02, 1.02))
    axes[0][0].set_ylabel("recovered (bands: simultaneous 95 %)")
    if cadences:
        axes[0][0].legend(loc="lower right")
    paths["recovery_vs_snr"] = save_figure(fig, directory / f"{stem}_recovery_vs_snr.png")

    cadences = list(dict.fromkeys(fpr["cadence"])) if len(fpr) else []
    fig, axes = plt.subplots(1, max(1, len(cadences)), figsize=(4.2 * max(1, len(cadences)), 3.6),
                             squeeze=False)
    for ax, name in zip(axes[0], cadences):
        for shift, (label, style) in zip((-0.12, 0.12), (("reference", "k"), ("backend", "C1"))):
            part = fpr[(fpr["cadence"] == name) & (fpr["column"] == label)]
            x = np.arange(len(part)) + shift
            ax.errorbar(x, 100 * part["rate"], yerr=100 * np.vstack([part["rate"] - part["low"],
                                                                     part["high"] - part["rate"]]),
                        fmt="o", color=style, label=label, capsize=3, ms=4)
            ax.set_xticks(np.arange(len(part)), part["noise"])
        ax.axhline(100 * decision.FALSE_POSITIVE_RATE, color="0.6", ls="--", lw=0.8)
        ax.set(title=name, xlabel="test nulls' noise")
    axes[0][0].set_ylabel("false positives [%] (simultaneous 95 %)")
    if cadences:
        axes[0][0].legend()
    paths["false_positives"] = save_figure(fig, directory / f"{stem}_false_positives.png")
    return paths


def stem_of(run):
    every = len(run.cadences) == len(protocol_cases.CADENCES)
    quick = run.cadences[0].name.endswith("-quick")
    cadence = "" if every else "_" + "_".join(c.name.partition("-")[0] for c in run.cadences)
    return f"protocol_{outputs.label(run.backend)}{cadence}{'_quick' if quick else ''}"


def write(run, complete, argv):
    """The report under ``run.out``; (markdown path, whether every cadence passed)."""
    df = table(run)
    limits = thresholds(df)
    df = score(df, run, limits)
    summary, verdicts = summarise(df, run, limits)
    by_snr = rates(df, "snr_design", "recovered", "injections")
    fpr = rates(df, "noise", "false_positive", "test")
    sections = {"Recovery by SNR": by_snr, "False positives by noise (test nulls)": fpr,
                **{f"Recovery by {by}": rates(df, by, "recovered", "injections")
                   for by in ("noise", "truth_b", "duration_factor", "grazing")},
                "Agreement with CPU TLS on the subset": agreement(df, run)}
    stem, out = stem_of(run), run.out
    out.mkdir(parents=True, exist_ok=True)
    df.to_csv(out / f"{stem}.csv", index=False)
    summary.to_csv(out / f"{stem}_summary.csv", index=False)
    figs = figures(by_snr, fpr, out / "figures", stem)
    passed = complete and all(v.passed for v in verdicts.values())
    devices = sorted(df["device"].dropna().astype(str).unique())
    manifest = dict(
        backend=run.backend, reference=dict(cpu_tls=f"transitleastsquares power(backend='fused') "
                                                    f"on the first {run.subset} items of each set",
                                            beyond=run.reference),
        seed=run.seed, sizes_planned=run.sizes, reference_subset=run.subset, complete=complete,
        passed=passed, command=" ".join(["python -m validation.protocol", *argv]),
        date=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), devices=devices, versions=frontend.versions(VERSIONS),
        rule=dict(false_positive_rate=decision.FALSE_POSITIVE_RATE, confidence=decision.CONFIDENCE,
                  max_recovery_drop=decision.MAX_RECOVERY_DROP, max_fpr_change=decision.MAX_FPR_CHANGE,
                  period_tolerance=metrics.PERIOD_TOL),
        cadences={layout.name: dict(layout=asdict(layout), options=layout.options,
                                    **summary[summary["cadence"] == layout.name].iloc[0].to_dict(),
                                    bounds=verdicts[layout.name].bounds,
                                    reasons=list(verdicts[layout.name].reasons))
                  for layout in run.cadences})
    (out / f"{stem}.json").write_text(json.dumps(manifest, indent=1, default=_plain))
    path = out / f"{stem}.md"
    path.write_text(markdown(run, manifest, summary, verdicts, sections, figs, stem))
    return path, passed


def markdown(run, manifest, summary, verdicts, sections, figs, stem):
    """The report's text: header, rule, verdicts, the summary (one column per cadence),
    figures and ``sections`` (title -> table)."""
    status = ("PASS" if manifest["passed"] else "FAIL") if manifest["complete"] else "INCOMPLETE"
    lines = [f"# Detection protocol: `{run.backend}` against CPU TLS: {status}", "",
             f"- reference: {manifest['reference']['cpu_tls']}; `{run.reference}` beyond (exact)",
             f"- sizes planned per cadence: {run.sizes}; seed {run.seed}; devices: "
             f"{', '.join(manifest['devices']) or '-'}",
             f"- command: `{manifest['command']}`; {manifest['date']}",
             f"- versions: {', '.join(f'{k} {v}' for k, v in manifest['versions'].items())}", "",
             "Rule (fixed before outcomes, `validation/decision.py`): threshold = the reference's "
             "99th percentile of calibration-null SDE; recovered = SDE above it, period within 1 % "
             "and T0 within half a duration; false positive = a test null above it (a failed search "
             "counts against its column); pass = recovery drop < 5 pp and false-positive change "
             "within +-2 pp, judged by simultaneous 95 % Clopper-Pearson bounds (Bonferroni over "
             "the cadence's 8 proportions) on the paired differences.", "", "## Verdict", ""]
    for name, verdict in verdicts.items():
        lines.append(f"- **{name}**: {'pass' if verdict.passed else 'fail'}"
                     + (f" ({'; '.join(verdict.reasons)})" if verdict.reasons else ""))
    per_cadence = summary.set_index("cadence").T.rename_axis("").reset_index()
    lines += ["", "## Per cadence (rates as fractions; bounds simultaneous 95 %)", "",
              markdown_table(per_cadence), "",
              *(f"![{k}](figures/{p.name})" for k, p in figs.items()), ""]
    for title, frame in sections.items():
        lines += [f"## {title}", "", markdown_table(frame), ""]
    lines += [f"Full table: `{stem}.csv`; sizes, counts and bounds: `{stem}.json`.", ""]
    return "\n".join(lines)


def _plain(x):
    if isinstance(x, np.generic):
        return x.item()
    raise TypeError(f"cannot write {type(x).__name__}")
