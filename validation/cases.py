"""The suites: lists of cases (small JSON-able specs), and their inputs.

A case is built into its light curve only when it runs (``materialize``), so
listing a 600-case suite is instant and ``--limit`` / resume are cheap. Every
random draw is seeded from ``--seed`` and the case's index.

quick      4 small synthetic curves (30-min cadence, 30-40 d) and the 7 shipped
           real ones, K2 at full resolution and TESS binned to 10 min, each searched
           over periods from half the shortest to twice the longest known planet's
           (TLS caps them at half the baseline), so it runs in minutes on 2 cores.
synthetic  542 seeded injections and noise-only curves over 14 survey layouts
           (ndata 500 to 100,000, 2 and 30 min cadence, 27-150 d with gaps). The 8
           small layouts get the full grid: noise 200/1000/4000 ppm x impact parameter
           0/0.5/0.85/1.0 (grazing) x SNR 4/7/10/15/30, plus one noise-only curve per
           noise level (480 injections). The 6 large ones (4,000-100,000 points) get a
           few cases spread over the same axes (``spread``): CPU TLS takes 0.5-6 core
           minutes on each, so a full grid there would cost ~12 core-hours.
k2, tess   the shipped curves of that mission at full resolution (each known
           planet recovered; multi-planet systems searched again with each
           detection masked), plus 20 transits per curve injected into its real
           noise (flattened, known transits removed; the injection comes after
           the flattening, so it measures the search, not the detrending) at
           random periods, impact parameters and SNR 4-40.
all        synthetic + k2 + tess.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import numpy as np

from datasets import real, synthetic
from datasets.detrend import robust_sigma

SUITES = ("quick", "synthetic", "k2", "tess", "all")
INJECTIONS_PER_CURVE = 20
QUICK_BIN_MIN = 10.0


@dataclass(frozen=True)
class Case:
    id: str
    kind: str  # "synthetic", "real" (known planets) or "injected" (into real noise)
    params: dict
    options: dict = field(default_factory=dict)  # transitleastsquares power() options


@dataclass
class Input:
    t: np.ndarray
    y: np.ndarray
    dy: np.ndarray
    truths: list  # dicts with name, period, t0, duration, depth_ppm, snr (empty: no planet)
    info: dict


# (cadence [min], baseline [d], ndata or None for every cadence, cases or None for the full grid)
LAYOUTS = ((30.0, 27.0, 500, None), (30.0, 27.0, None, None), (30.0, 54.0, 1000, None),
           (30.0, 90.0, 500, None), (2.0, 27.0, 1000, None), (2.0, 27.0, 2000, None),
           (2.0, 27.0, 5000, None), (2.0, 54.0, 2000, None),
           (30.0, 90.0, None, 12), (30.0, 120.0, None, 3), (2.0, 27.0, None, 12),
           (2.0, 54.0, None, 6), (2.0, 90.0, None, 3), (2.0, 150.0, 100_000, 2))
NOISE_PPM = (200.0, 1000.0, 4000.0)
IMPACTS = (0.0, 0.5, 0.85, 1.0)
SNRS = (4.0, 7.0, 10.0, 15.0, 30.0)
# a sparse layout's case j: SNR, b and noise cycle at once (12 distinct triples), the
# clearest first, so even 2 cases hold a moderate and a strong, grazing transit
SPREAD = ((10.0, 30.0, 0.0, 7.0, 15.0, 4.0), (0.5, 1.0, 0.0, 0.85), (1000.0, 4000.0, 200.0))
ORBIT = 13.7  # [d] TESS orbit: one 1-day downlink gap per orbit
REAL_INDEX = {name: i for i, name in enumerate(real.REAL_NAMES)}
K2 = tuple(n for n in real.REAL_NAMES if "_K2_" in n)
TESS = tuple(n for n in real.REAL_NAMES if "_TESS_" in n)


def gaps_for(cadence_min, baseline):
    if cadence_min < 10:
        return tuple((k * ORBIT / baseline, 1.0) for k in range(1, int(baseline / ORBIT) + 1)
                     if k * ORBIT + 1.0 < baseline)
    return ((0.48, 1.5),)


def full_grid():
    """(noise, b, snr) of a small layout: every injection, plus noise only at each noise level."""
    return ([(noise, 0.0, 0.0) for noise in NOISE_PPM]
            + list(itertools.product(NOISE_PPM, IMPACTS, SNRS)))


def spread(n):
    """(noise, b, snr) of a large layout's ``n`` cases, each axis cycled (see SPREAD)."""
    snrs, impacts, noises = SPREAD
    return [(noises[j % 3], impacts[(j + j // 12) % 4], snrs[j % 6]) for j in range(n)]


def synthetic_cases(seed):
    cases = []
    for cadence, baseline, ndata, n in LAYOUTS:
        for noise, b, snr in full_grid() if n is None else spread(n):
            i = len(cases)
            params = dict(seed=seed * 1_000_003 + i, preset="k2" if cadence > 10 else "tess",
                          cadence_min=cadence, baseline=baseline, ndata=ndata,
                          gaps=gaps_for(cadence, baseline), noise_ppm=noise, b=b, snr=snr)
            cases.append(Case(f"syn{i:04d}", "synthetic", params))
    order = np.random.default_rng(seed).permutation(len(cases))  # --limit takes a spread
    return [cases[k] for k in order]


def quick_synthetic(seed):
    specs = ((35.0, 0.2, 20.0), (40.0, 0.6, 12.0), (30.0, 1.0, 25.0), (35.0, 0.3, 0.0))
    return [Case(f"quick-syn{i}", "synthetic",
                 dict(seed=seed * 1_000_003 + 900_000 + i, preset="k2", cadence_min=30.0,
                      baseline=baseline, gaps=((0.48, 1.0),), noise_ppm=500.0, b=b, snr=snr,
                      ndata=None))
            for i, (baseline, b, snr) in enumerate(specs)]


def real_cases(names, bin_minutes=None, restrict=False):
    cases = []
    for name in names:
        options = {}
        if restrict:  # periods from half the shortest to twice the longest known one
            periods = [p.period for p in real.planets(name)]
            options = dict(period_min=0.5 * min(periods), period_max=2.0 * max(periods))
        binning = bin_minutes if name in TESS else None
        cases.append(Case(name, "real", dict(name=name, bin_minutes=binning), options))
    return cases


def injected_cases(names, seed):
    cases = []
    for name in names:
        rng = np.random.default_rng([seed, REAL_INDEX[name]])
        for j in range(INJECTIONS_PER_CURVE):
            params = dict(name=name, seed=int(rng.integers(2**31)),
                          snr=float(np.exp(rng.uniform(math.log(4), math.log(40)))),
                          b=float(rng.uniform(0, 0.9)))
            cases.append(Case(f"{name}-inj{j:02d}", "injected", params))
    return cases



def suite(name, seed=0):
    """The cases of suite ``name``, in run order."""
    if name == "quick":
        return quick_synthetic(seed) + real_cases(real.REAL_NAMES, QUICK_BIN_MIN, restrict=True)
    if name == "synthetic":
        return synthetic_cases(seed)
    if name == "k2":
        return real_cases(K2) + injected_cases(K2, seed)
    if name == "tess":
        return real_cases(TESS) + injected_cases(TESS, seed)
    if name == "all":
        return suite("k2", seed) + suite("tess", seed) + synthetic_cases(seed)
    raise ValueError(f"unknown suite {name!r}; suites: {', '.join(SUITES)}")


def planet_truth(p):
    return dict(name=p.name, period=p.period, t0=p.t0, duration=p.duration,
                depth_ppm=p.depth_ppm, snr=p.snr)


def searchable(planets, span, options):
    """(planets inside the searched period range, notes on the others): TLS
    searches periods up to span / n_transits_min (2 transits by default)."""
    p_max = min(span / options.get("n_transits_min", 2), options.get("period_max", math.inf))
    p_min = options.get("period_min", 0.0)
    inside = tuple(pl for pl in planets if p_min <= pl.period <= p_max)
    notes = tuple(f"{pl.name} outside the searched periods ({pl.period:.4g} d not in "
                  f"[{p_min:.3g}, {p_max:.4g}] d)" for pl in planets if pl not in inside)
    return inside, notes


def materialize(case):
    """The case's light curve (clean float64 arrays) and its truths."""
    p = case.params
    if case.kind == "synthetic":
        kwargs = {k: v for k, v in p.items()}
        kwargs["gaps"] = tuple(tuple(g) for g in kwargs["gaps"])
        try:
            lc = synthetic.simulate(**kwargs)
        except synthetic.DepthOutOfReach:  # few points, grazing: the SNR asked for needs Rp/R* > 0.5
            lc = synthetic.simulate(**dict(kwargs, snr=None, rp_rs=synthetic.RP_RS_RANGE[1]))  # truth: its SNR
        truths = [] if lc.truth["snr"] == 0 else [dict(lc.truth, name="injected")]
        return Input(lc.t, lc.y, lc.dy, truths, dict(target=f"synthetic {p['preset']}-like"))
    if case.kind == "real":
        lc = real.load(p["name"], bin_minutes=p.get("bin_minutes"))
        found, notes = searchable(lc.planets, float(lc.t.max() - lc.t.min()), case.options)
        return Input(lc.t, lc.y, lc.dy, [planet_truth(pl) for pl in found],
                     dict(target=lc.meta["target"], steps="; ".join(lc.steps + notes)))
    if case.kind == "injected":
        lc = real.load(p["name"], mask_planets=True, bin_minutes=p.get("bin_minutes"))
        rng = np.random.default_rng(p["seed"])
        span = float(lc.t.max() - lc.t.min())
        period = float(np.exp(rng.uniform(math.log(0.7), math.log(span / 3))))
        t0 = float(lc.t.min() + rng.uniform(0, period))
        sigma = robust_sigma(lc.y)
        exp_time = synthetic.exposure_time(lc.cadence_min)
        inj = synthetic.injection_for(lc.t, sigma, period, t0, b=p["b"], snr=p["snr"],
                                      exp_time=exp_time)
        model = synthetic.transit_model(lc.t, inj, exp_time)
        truth = dict(synthetic.truth_of(lc.t, model, inj, sigma), name="injected")
        return Input(lc.t, lc.y * model, lc.dy, [truth],
                     dict(target=f"{lc.meta['target']} + injection", steps="; ".join(lc.steps)))
    raise ValueError(f"unknown case kind {case.kind!r}")
