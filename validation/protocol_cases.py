"""The protocol's light curves: per cadence, calibration nulls, injections and test nulls.

A cadence (``CADENCES``) is a survey layout with the period range its searches
cover (``options``). An item is (cadence, set, index); its light curve comes from
the seed and those alone (``build``), so every run holds the same first N items
of a set and a larger run extends a smaller one.

Noise, by ``index % 3``: white (Gaussian at the layout's level); red (the same
white noise plus AR(1) noise, ``synthetic.red_noise``, correlation time
log-uniform in ``RED_TAU`` and 0.25-1x the white level); real (a window of a
shipped light curve of that cadence with its planets and outliers removed,
cyclically shifted and maybe reversed, ``real.noise_window``). Calibration and test nulls are
independent draws of that mixture; the real ones share the few shipped curves.

Injections: the same noises with one batman transit, the design cycled so that
every prefix of the set is balanced: expected SNR (``SNRS``), duration
(``DURATION_FACTORS`` x a Sun-like star's at that period, through a/R*) and
impact parameter (``IMPACTS``; b = 1 is grazing whatever Rp/R*, b >= 1 - Rp/R*
is flagged ``grazing``); period log-uniform over the searched range, phase
uniform. A grazing transit too deep for Rp/R* <= 0.5 gets the deepest one (its
true, lower SNR is recorded).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from datasets import real, synthetic
from datasets.detrend import robust_sigma
from validation.cases import K2, TESS

SETS = ("calibration", "injections", "test")
NOISES = ("white", "red", "real")
SNRS = (5.0, 7.0, 9.0, 11.0, 14.0, 20.0)
IMPACTS = (0.0, 0.5, 0.85, 1.0)
DURATION_FACTORS = (0.5, 1.0, 2.0)
RED_TAU = (0.01, 0.2)  # [d]
PLACEMENT_TRIES = 50  # draws of period and phase until a transit falls on data
TRUTH_FIELDS = ("period", "t0", "duration", "depth_ppm", "snr", "b", "rp_rs", "n_transits")


@dataclass(frozen=True)
class Cadence:
    name: str
    cadence_min: float
    baseline: float  # [d]
    gaps: tuple  # as datasets.synthetic.time_grid's
    noise_ppm: float  # white noise of the synthetic nulls
    period_min: float  # [d] the searched range, and the injected periods'
    period_max: float
    real: tuple  # shipped curves whose noise the real nulls are cut from
    bin_minutes: float | None = None  # their binning (10-min FFI from 2-min curves)

    @property
    def options(self):
        """transitleastsquares power() options of every search of this cadence."""
        return dict(period_min=self.period_min, period_max=self.period_max)


CADENCES = {
    "k2": Cadence("k2", 29.4, 60.0, ((0.48, 1.0),), 150.0, 1.0, 20.0, K2),
    "tess2min": Cadence("tess2min", 2.0, 27.0, ((0.49, 1.0),), 1000.0, 1.0, 9.0, TESS),
    "ffi10min": Cadence("ffi10min", 10.0, 27.0, ((0.49, 1.0),), 450.0, 1.0, 9.0, TESS, 10.0),
}
QUICK = dict(baseline=6.0, period_max=2.0)  # --quick: seconds per cadence on 2 cores


def cadence(name):
    """The layout ``name`` (``k2``, ..., or ``k2-quick``, ...: the --quick one)."""
    base, _, quick = name.partition("-")
    if base not in CADENCES or quick not in ("", "quick"):
        raise ValueError(f"unknown cadence {name!r}; cadences: {', '.join(CADENCES)}")
    return replace(CADENCES[base], name=name, **QUICK) if quick else CADENCES[base]


def design(index):
    """(noise, SNR, impact parameter, duration factor) of injection ``index``."""
    noise = NOISES[index % 3]
    index //= 3
    snr = SNRS[index % len(SNRS)]
    index //= len(SNRS)
    return noise, snr, IMPACTS[index % len(IMPACTS)], DURATION_FACTORS[index // len(IMPACTS) % 3]


@dataclass
class Item:
    t: np.ndarray
    y: np.ndarray
    dy: np.ndarray
    info: dict  # noise, source, and for an injection its design and truth_* (scalars)


def noise(layout, kind, rng):
    """(t, y, dy, sigma, source): a null light curve of ``kind`` and its white-equivalent sigma."""
    if kind == "real":
        name = layout.real[int(rng.integers(len(layout.real)))]
        t, y, dy = real.noise_window(name, layout.baseline, rng, layout.bin_minutes)
        return t, y, dy, robust_sigma(y), name
    t = synthetic.time_grid(layout.baseline, layout.cadence_min, layout.gaps)
    sigma = layout.noise_ppm * 1e-6
    y = 1.0 + rng.normal(0.0, sigma, t.size)
    if kind == "red":
        tau = float(np.exp(rng.uniform(*np.log(RED_TAU))))
        red = sigma * rng.uniform(0.25, 1.0)
        y += synthetic.red_noise(t, layout.cadence_min, tau, red, rng)
        sigma = math.hypot(sigma, red)
    return t, y, np.full(t.size, sigma), sigma, "synthetic"


def build(layout, set_name, index, seed):
    """Item ``index`` of set ``set_name`` of cadence ``layout``."""
    base = list(CADENCES).index(layout.name.partition("-")[0])
    rng = np.random.default_rng([seed, base, SETS.index(set_name), index])
    if set_name != "injections":
        kind = NOISES[index % 3]
        t, y, dy, _, source = noise(layout, kind, rng)
        return Item(t, y, dy, dict(noise=kind, source=source))
    kind, snr, b, factor = design(index)
    t, y, dy, sigma, source = noise(layout, kind, rng)
    exp_time = synthetic.exposure_time(layout.cadence_min)
    for _ in range(PLACEMENT_TRIES):
        period = float(np.exp(rng.uniform(math.log(layout.period_min), math.log(layout.period_max))))
        t0 = float(t[0] + rng.uniform(0.0, period))
        a_rs = synthetic.Injection(period=period, t0=t0, rp_rs=0.0).a / factor
        try:
            inj = synthetic.injection_for(t, sigma, period, t0, b=b, snr=snr, exp_time=exp_time,
                                          a_rs=a_rs)
        except synthetic.NoTransitInData:
            continue
        except synthetic.DepthOutOfReach:
            inj = synthetic.Injection(period=period, t0=t0, rp_rs=synthetic.RP_RS_RANGE[1], b=b,
                                      a_rs=a_rs)
        break
    else:
        raise RuntimeError(f"no transit of {layout.name} injection {index} fell on data "
                           f"in {PLACEMENT_TRIES} draws")
    model = synthetic.transit_model(t, inj, exp_time)
    truth = synthetic.truth_of(t, model, inj, sigma)
    info = dict(noise=kind, source=source, snr_design=snr, duration_factor=factor,
                grazing=bool(b >= 1 - inj.rp_rs),
                **{f"truth_{k}": truth[k] for k in TRUTH_FIELDS})
    return Item(t, y * model, dy, info)
