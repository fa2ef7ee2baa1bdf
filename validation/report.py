"""Tables, figures and the markdown report of a validation run, in its output folder."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from validation import metrics

CONSOLE_COLUMNS = {
    "case_id": "case", "planet": "planet", "truth_period": "P true", "truth_snr": "SNR true",
    "backend_period": "P backend", "backend_sde": "SDE backend", "cpu_period": "P cpu",
    "cpu_sde": "SDE cpu", "backend_recovered": "rec backend", "cpu_recovered": "rec cpu",
    "backend_alias": "alias", "sde_agree": "SDE agree", "speed_ratio": "speedup",
}


def console_table(table):
    cols = [c for c in CONSOLE_COLUMNS if c in table]
    view = table[cols].rename(columns=CONSOLE_COLUMNS)
    return view.to_string(index=False, float_format=lambda x: f"{x:.5g}")


def overall(table):
    """One-line-per-metric summary (dict)."""
    n = len(table)
    ok = table["backend_error"].isna() & table["cpu_error"].isna()
    extra = {}
    if "tlsdefault_recovered" in table:  # --tls-default
        extra = {"tls_default_recovered": int(table["tlsdefault_recovered"].sum()),
                 f"tls_default_detected_sde>={metrics.SDE_THRESHOLD:g}":
                     int(table["tlsdefault_detected"].sum()),
                 "tls_default_runtime_s": float(table["tlsdefault_runtime_s"].sum())}
    return extra | {
        "searches": n,
        "backend_recovered": int(table["backend_recovered"].sum()),
        "cpu_recovered": int(table["cpu_recovered"].sum()),
        f"backend_detected_sde>={metrics.SDE_THRESHOLD:g}": int(table["backend_detected"].sum()),
        f"cpu_detected_sde>={metrics.SDE_THRESHOLD:g}": int(table["cpu_detected"].sum()),
        "backend_false_alarms": int(table["backend_false_alarm"].sum()),
        "cpu_false_alarms": int(table["cpu_false_alarm"].sum()),
        "backend_aliases": int((table["backend_alias"] != "").sum()),
        "sde_agree_within_5pct": f"{int(table.loc[ok, 'sde_agree'].sum())}/{int(ok.sum())}",
        "period_agree_within_1pct": f"{int(table.loc[ok, 'period_agree'].sum())}/{int(ok.sum())}",
        "median_abs_sde_rel_diff": float(np.nanmedian(table["sde_rel_diff"])) if n else np.nan,
        "backend_errors": int(table["backend_error"].notna().sum()),
        "backend_refused": int(metrics.refused(table).sum()),
        "cpu_errors": int(table["cpu_error"].notna().sum()),
        "backend_runtime_s": float(table["backend_runtime_s"].sum()),
        "cpu_runtime_s": float(table["cpu_runtime_s"].sum()),
        "speed_ratio_median": float(np.nanmedian(table["speed_ratio"])) if n else np.nan,
    }


def figures(table, example, directory, stem):
    """recovery vs SNR, SDE agreement, example periodogram + fold; returns the paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    directory.mkdir(parents=True, exist_ok=True)
    paths = {}

    by_snr = metrics.summary_by_snr(table)
    null = by_snr[by_snr["snr_bin"] == "null"]
    by_snr = by_snr[by_snr["snr_bin"] != "null"]
    fig, ax = plt.subplots(figsize=(6, 3.5))
    x = np.arange(len(by_snr))
    ax.bar(x - 0.2, by_snr["backend_detection_rate"], 0.4, label="backend")
    ax.bar(x + 0.2, by_snr["cpu_detection_rate"], 0.4, label="CPU TLS (fused)")
    ax.set_xticks(x, by_snr["snr_bin"])
    ax.set(xlabel="expected SNR of the injected/known transit",
           ylabel=f"recovered at SDE >= {metrics.SDE_THRESHOLD:g}", ylim=(0, 1.05))
    if len(null):
        n = null.iloc[0]
        ax.set_title(f"noise-only curves: {n['cases']}, false alarms: backend "
                     f"{n['backend_false_alarms']}, CPU TLS {n['cpu_false_alarms']}", fontsize=9)
    ax.legend()
    paths["recovery_vs_snr"] = save_figure(fig, directory / f"{stem}_recovery_vs_snr.png")

    fig, ax = plt.subplots(figsize=(4.5, 4))
    ax.scatter(table["cpu_sde"], table["backend_sde"], s=10)
    top = np.nanmax(np.r_[table["cpu_sde"], table["backend_sde"], 10.0])
    ax.plot([0, top], [0, top], "k-", lw=0.8)
    ax.fill_between([0, top], [0, top * (1 - metrics.SDE_TOL)], [0, top * (1 + metrics.SDE_TOL)],
                    color="0.85", label="within 5 %")
    ax.set(xlabel="SDE, CPU TLS", ylabel="SDE, backend")
    ax.legend()
    paths["sde_agreement"] = save_figure(fig, directory / f"{stem}_sde_agreement.png")

    if example:
        fig, (a1, a2) = plt.subplots(2, 1, figsize=(7, 6))
        for side, style in (("cpu", "k-"), ("backend", "C1--")):
            if f"{side}_periods" in example["arrays"]:
                a1.plot(example["arrays"][f"{side}_periods"], example["arrays"][f"{side}_power"],
                        style, lw=0.7, label=side)
        a1.set(xlabel="period [d]", ylabel="SDE", title=example["title"])
        a1.legend()
        arrays = example["arrays"]
        if "cpu_fold_phase" in arrays:
            a2.plot(arrays["cpu_fold_phase"], arrays["cpu_fold_y"], ".", ms=2, color="0.4")
            a2.plot(arrays["cpu_model_phase"], arrays["cpu_model_y"], "r-", lw=1)
            a2.set(xlabel="phase", ylabel="flux (binned)", xlim=(0.45, 0.55))
        paths["example"] = save_figure(fig, directory / f"{stem}_example.png")
    return paths


def markdown_table(df, digits=3):
    """A pipe table of a DataFrame (floats to ``digits`` significant digits)."""
    def cell(v):
        return f"{v:.{digits}g}" if isinstance(v, float) else str(v)

    head = "| " + " | ".join(df.columns) + " |"
    rule = "|" + "---|" * len(df.columns)
    body = ["| " + " | ".join(cell(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join([head, rule, *body])


def save_figure(fig, path):
    """``fig`` saved to ``path`` (PNG) and closed; the path."""
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    import matplotlib.pyplot as plt

    plt.close(fig)
    return path


def write(table, example, out, stem, header):
    """CSV, Parquet, figures and markdown under ``out``; returns the markdown's path."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    table.to_csv(out / f"{stem}.csv", index=False)
    table.to_parquet(out / f"{stem}.parquet", index=False)
    figs = figures(table, example, out / "figures", stem)
    summary = overall(table)
    by_snr = metrics.summary_by_snr(table)
    lines = [f"# Injection-recovery: {header['backend']} vs CPU transitleastsquares", "",
             *(f"- {k}: {v}" for k, v in header.items()), "",
             "A search recovers a planet when the period is within 1 % (integer aliases flagged, "
             "not counted) and T0 within half a duration; detected = recovered at "
             f"SDE >= {metrics.SDE_THRESHOLD:g}; a false alarm is SDE >= {metrics.SDE_THRESHOLD:g} "
             "on anything else. Duration (10 %) and depth (5 %) agreement are separate columns "
             "of the CSV.", "", "## Summary", "",
             "| metric | value |", "|---|---|",
             *(f"| {k} | {v:.4g} |" if isinstance(v, float) else f"| {k} | {v} |"
               for k, v in summary.items()),
             "", "## Recovery by SNR", "", markdown_table(by_snr), ""]
    lines += [f"![{name}](figures/{p.name})" for name, p in figs.items()]
    failed = table[table["backend_error"].notna()]
    if len(failed):  # per search: why the backend (or peer) gave no result, or a nonsense one
        lines += ["", "## Backend errors", "", markdown_table(failed[["case_id", "step", "backend_error"]])]
    lines += ["", "## Cases", "", f"Full table: `{stem}.csv` / `{stem}.parquet`.", "",
              "```", console_table(table), "```", ""]
    path = out / f"{stem}.md"
    path.write_text("\n".join(lines))
    return path
