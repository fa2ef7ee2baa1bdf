"""Per-search comparison with the truth, and the suite summary.

A search *recovers* a planet when its period is within 1 % of the truth and
its T0 within half a transit duration of a true mid-transit. An integer alias
(P x 2..5 or P / 2..5 within 1 %) is flagged, not counted as recovered.
Duration (within 10 %) and depth (within 5 %) are recorded as separate flags:
TLS's duration grid steps by 10 % and literature depths are defined in
different ways, so a correct detection often misses them. The backend's SDE
must agree with CPU TLS's within 5 %. A *detection* is a recovery at
SDE >= ``SDE_THRESHOLD``; a *false alarm* is SDE >= threshold on anything else.
"""

from __future__ import annotations

import math

import numpy as np

SDE_THRESHOLD = 9.0  # TLS's recommended threshold (false-alarm probability ~1e-4)
PERIOD_TOL = 0.01
DURATION_TOL = 0.10
DEPTH_TOL = 0.05
SDE_TOL = 0.05
ALIASES = (2, 3, 4, 5)
SNR_BINS = (0, 5, 7, 10, 15, 30, math.inf)


def alias(found, true):
    """'2x', '1/3x', ... when ``found`` is an integer multiple or fraction of ``true``, else ''."""
    if not (found > 0 and true > 0):
        return ""
    ratio = found / true
    for k in ALIASES:
        if abs(ratio / k - 1) < PERIOD_TOL:
            return f"{k}x"
        if abs(ratio * k - 1) < PERIOD_TOL:
            return f"1/{k}x"
    return ""


def t0_offset(found_t0, true_t0, period):
    """Distance [d] from ``found_t0`` to the nearest true mid-transit."""
    dt = found_t0 - true_t0
    return abs(dt - round(dt / period) * period)


def compare(found, truth):
    """Flags of one search outcome against a truth dict (None: no planet)."""
    flags = dict(period_ok=False, alias="", t0_ok=False, duration_ok=False, depth_ok=False,
                 recovered=False)
    sde = found.get("sde", math.nan)
    detected = bool(np.isfinite(sde) and sde >= SDE_THRESHOLD)
    if truth is None or not np.isfinite(found["period"]) or not np.isfinite(truth["period"]):
        flags.update(detected=False, false_alarm=detected)
        return flags
    p, tp = found["period"], truth["period"]
    flags["period_ok"] = abs(p / tp - 1) < PERIOD_TOL
    flags["alias"] = "" if flags["period_ok"] else alias(p, tp)
    flags["t0_ok"] = bool(t0_offset(found["t0"], truth["t0"], tp) < 0.5 * truth["duration"])
    flags["duration_ok"] = bool(abs(found["duration"] / truth["duration"] - 1) < DURATION_TOL)
    flags["depth_ok"] = bool(truth["depth_ppm"] > 0
                             and abs(found["depth_ppm"] / truth["depth_ppm"] - 1) < DEPTH_TOL)
    flags["recovered"] = bool(flags["period_ok"] and flags["t0_ok"])
    flags.update(detected=flags["recovered"] and detected,
                 false_alarm=detected and not flags["recovered"])
    return flags


def agreement(backend, cpu):
    """Backend vs CPU TLS on the same input: SDE within 5 %, period within 1 %, speed ratio."""
    sde_b, sde_c = backend["sde"], cpu["sde"]
    rel = abs(sde_b - sde_c) / abs(sde_c) if sde_c else math.nan
    period_rel = abs(backend["period"] / cpu["period"] - 1) if cpu["period"] else math.nan
    speed = cpu["runtime_s"] / backend["runtime_s"] if backend["runtime_s"] else math.nan
    return dict(sde_rel_diff=rel, sde_agree=bool(rel <= SDE_TOL),
                period_agree=bool(period_rel < PERIOD_TOL), speed_ratio=speed)


def snr_bin(snr):
    for lo, hi in zip(SNR_BINS[:-1], SNR_BINS[1:]):
        if lo <= snr < hi:
            return "null" if snr == 0 else f"{lo:g}-{hi:g}"
    return "null"


def summary_by_snr(table):
    """Per SNR bin: cases, detection rate of backend and CPU TLS, false alarms."""
    import pandas as pd

    df = table.assign(snr_bin=[snr_bin(s) if np.isfinite(s) else "null" for s in table["truth_snr"]])
    order = ["null"] + [f"{lo:g}-{hi:g}" for lo, hi in zip(SNR_BINS[:-1], SNR_BINS[1:])]
    rows = []
    for name in order:
        part = df[df["snr_bin"] == name]
        if part.empty:
            continue
        rows.append(dict(snr_bin=name, cases=len(part),
                         backend_detection_rate=float(part["backend_detected"].mean()),
                         cpu_detection_rate=float(part["cpu_detected"].mean()),
                         backend_false_alarms=int(part["backend_false_alarm"].sum()),
                         cpu_false_alarms=int(part["cpu_false_alarm"].sum())))
    return pd.DataFrame(rows)


def refused(table):
    """Cases the backend declined by design (``InputTooLarge``) rather than failed."""
    if "backend_error" not in table:
        return np.zeros(len(table), bool)
    return table["backend_error"].fillna("").astype(str).str.contains("InputTooLarge").to_numpy()


def verdict(table, margin=0.02):
    """(ok, reasons): the backend fails when it misses a case CPU TLS recovers at
    SDE >= threshold, or detects fewer cases than CPU TLS by more than
    ``margin`` x cases (at least one). Cases the backend refused by design are
    left out (and counted as ``backend_refused`` in the summary)."""
    reasons = []
    table = table[~refused(table)]  # by design (e.g. simple beyond shared memory): reported, not missed
    missed = table[table["cpu_detected"] & ~table["backend_recovered"]]
    if len(missed):
        names = ", ".join(f"{c}[{s}]" for c, s in zip(missed["case_id"], missed["step"]))
        reasons.append(f"backend misses {len(missed)} case(s) CPU TLS recovers at SDE >= "
                       f"{SDE_THRESHOLD:g}: {names}")
    allowed = max(1, int(math.floor(margin * len(table))))
    shortfall = int(table["cpu_detected"].sum()) - int(table["backend_detected"].sum())
    if shortfall > allowed:
        reasons.append(f"backend detects {shortfall} fewer cases than CPU TLS "
                       f"(allowed margin: {allowed}, {margin:.0%} of {len(table)})")
    return not reasons, reasons
