"""Seeded synthetic light curves with batman transits.

``simulate(seed, preset, **overrides)`` builds a time grid (cadence, baseline,
gaps, optional thinning to ``ndata`` points), white noise (``red_noise`` adds
correlated noise), and one injected
limb-darkened transit given by its depth, its Rp/R* or the SNR it should have.
The result carries the truth a recovery test compares against: period, first
mid-transit T0, T14 duration, depth at mid-transit, expected SNR. Presets:
``k2`` (90 d at 29.4 min) and ``tess`` (27 d at 2 min), each with gaps.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import numpy as np

DEFAULT_U = (0.4804, 0.1867)  # TLS's default quadratic limb darkening (a Sun-like star)
LONG_CADENCE_MIN = 10.0  # cadences longer than this are integrated over the exposure


@dataclass(frozen=True)
class Preset:
    cadence_min: float
    baseline: float  # [d]
    gaps: tuple = ()  # (start as a fraction of the baseline, length [d])


PRESETS = {
    "k2": Preset(cadence_min=29.4, baseline=90.0, gaps=((0.48, 1.5),)),
    "tess": Preset(cadence_min=2.0, baseline=27.0, gaps=((0.49, 1.0),)),
}


@dataclass(frozen=True)
class Injection:
    """One circular-orbit transit. ``a_rs`` defaults to Kepler's law for a
    Sun-like star (as TLS's default template); b > 1 - rp_rs is grazing."""

    period: float  # [d]
    t0: float  # [d] a mid-transit time
    rp_rs: float
    b: float = 0.0
    a_rs: float | None = None
    u: tuple = DEFAULT_U

    @property
    def a(self) -> float:
        if self.a_rs is not None:
            return self.a_rs
        from transitleastsquares import tls_constants as c

        seconds = self.period * c.SECONDS_PER_DAY
        return (c.G * c.M_sun * seconds**2 / (4 * math.pi**2)) ** (1 / 3) / c.R_sun

    @property
    def duration(self) -> float:
        """T14 [d] (first to last contact); 0 when the planet misses the star."""
        chord = (1 + self.rp_rs) ** 2 - self.b**2
        if chord <= 0:
            return 0.0
        a = self.a
        sin_i = math.sqrt(1 - (self.b / a) ** 2)
        return self.period / math.pi * math.asin(min(1.0, math.sqrt(chord) / (a * sin_i)))


def transit_model(t, injection, exp_time=0.0):
    """batman relative flux at times ``t``; ``exp_time`` [d] > 0 integrates over the exposure."""
    import batman

    if injection.b >= injection.a:
        raise ValueError(f"impact parameter {injection.b} >= a/R* {injection.a:.3g}")
    params = batman.TransitParams()
    params.t0, params.per, params.rp = injection.t0, injection.period, injection.rp_rs
    params.a = injection.a
    params.inc = math.degrees(math.acos(injection.b / injection.a))
    params.ecc, params.w = 0.0, 90.0
    params.u, params.limb_dark = list(injection.u), "quadratic"
    t = np.ascontiguousarray(t, dtype=np.float64)
    if exp_time > 0:
        model = batman.TransitModel(params, t, supersample_factor=7, exp_time=exp_time)
    else:
        model = batman.TransitModel(params, t)
    return model.light_curve(params)


def exposure_time(cadence_min):
    """[d] exposure a model integrates over: the cadence for long cadences, else 0."""
    return cadence_min / 1440 if cadence_min > LONG_CADENCE_MIN else 0.0


def inject(t, y, injection, exp_time=0.0):
    """``y`` multiplied by the transit model (real or synthetic noise)."""
    return np.asarray(y, dtype=np.float64) * transit_model(t, injection, exp_time)


def mid_depth(injection) -> float:
    """Depth at mid-transit (unintegrated), as a fraction."""
    return float(1.0 - transit_model(np.array([injection.t0]), injection)[0])


RP_RS_RANGE = (1e-4, 0.5)  # the planet sizes rp_for_depth searches


class DepthOutOfReach(ValueError):
    """No Rp/R* in ``RP_RS_RANGE`` gives the depth asked for (e.g. grazing, b near 1)."""


class NoTransitInData(ValueError):
    """Every transit of the injection falls between the data points."""


def rp_for_depth(depth, b=0.0, period=10.0, a_rs=None, u=DEFAULT_U):
    """Rp/R* whose transit is ``depth`` deep at mid-transit (bisection on batman)."""
    def depth_of(k):
        return mid_depth(Injection(period=period, t0=0.0, rp_rs=k, b=b, a_rs=a_rs, u=u))

    lo, hi = RP_RS_RANGE
    if not depth_of(lo) <= depth <= depth_of(hi):
        raise DepthOutOfReach(f"depth {depth:.3g} is out of reach at b={b} (Rp/R* in [{lo}, {hi}])")
    for _ in range(50):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if depth_of(mid) < depth else (lo, mid)
    return 0.5 * (lo + hi)


def expected_snr(t, model, sigma) -> float:
    """SNR of the injected signal: mean in-transit depth / sigma * sqrt(points in transit)."""
    dip = 1.0 - model
    inside = dip > 0
    if not inside.any() or sigma <= 0:
        return 0.0
    return float(dip[inside].sum() / (sigma * math.sqrt(inside.sum())))


def time_grid(baseline, cadence_min, gaps=(), ndata=None, start=0.0, rng=None):
    """Regular cadence over ``baseline`` days minus ``gaps``, randomly thinned to ``ndata``."""
    t = start + np.arange(0.0, baseline, cadence_min / 1440)
    keep = np.ones(t.size, bool)
    for frac, length in gaps:
        g0 = start + frac * baseline
        keep &= ~((t >= g0) & (t < g0 + length))
    t = t[keep]
    if ndata is not None:
        if ndata > t.size:
            raise ValueError(f"ndata={ndata} exceeds the {t.size} cadences of {baseline} d at "
                             f"{cadence_min} min; lengthen the baseline or shorten the cadence")
        rng = rng if rng is not None else np.random.default_rng(0)
        t = np.sort(rng.choice(t, size=ndata, replace=False))
    return t


def red_noise(t, cadence_min, tau, sigma, rng):
    """Stationary AR(1) noise (an Ornstein-Uhlenbeck process: correlation
    exp(-dt / tau), ``tau`` in days) of standard deviation ``sigma`` at times
    ``t`` on a regular grid of ``cadence_min`` (gaps allowed: the process runs on
    through them)."""
    from scipy.signal import lfilter

    step = cadence_min / 1440
    index = np.rint((np.asarray(t) - t[0]) / step).astype(np.int64)
    phi = math.exp(-step / tau)
    kicks = rng.normal(0.0, sigma, index[-1] + 1)
    kicks[1:] *= math.sqrt(1 - phi**2)  # the first sample is drawn from the stationary law
    return lfilter([1.0], [1.0, -phi], kicks)[index]


@dataclass
class SyntheticLightCurve:
    t: np.ndarray
    y: np.ndarray
    dy: np.ndarray
    truth: dict = field(default_factory=dict)


def simulate(seed=0, preset="k2", *, baseline=None, cadence_min=None, gaps=None, ndata=None,
             noise_ppm=500.0, period=None, t0=None, depth_ppm=None, rp_rs=None, snr=None,
             b=0.3, u=DEFAULT_U, start=0.0):
    """A seeded light curve with white noise and (unless depth/SNR is 0) one transit.

    Give at most one of ``depth_ppm``, ``rp_rs`` or ``snr`` (default: snr=15).
    ``period`` defaults to a log-uniform draw in [0.8, baseline / 3] d (TLS's
    default grid starts at 0.6 d) and ``t0`` to a uniform phase. ``truth``
    records the injected signal; its period is NaN for a noise-only curve.
    """
    if sum(x is not None for x in (depth_ppm, rp_rs, snr)) > 1:
        raise ValueError("give at most one of depth_ppm, rp_rs, snr")
    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; presets: {', '.join(PRESETS)}")
    p = PRESETS[preset]
    baseline = p.baseline if baseline is None else baseline
    cadence_min = p.cadence_min if cadence_min is None else cadence_min
    gaps = p.gaps if gaps is None else gaps
    rng = np.random.default_rng(seed)
    t = time_grid(baseline, cadence_min, gaps, ndata, start, rng)
    sigma = noise_ppm * 1e-6
    y = 1.0 + rng.normal(0.0, sigma, t.size)
    dy = np.full(t.size, sigma)
    if period is None:
        period = float(np.exp(rng.uniform(math.log(0.8), math.log(baseline / 3))))
    if t0 is None:
        t0 = start + float(rng.uniform(0, period))
    truth = dict(preset=preset, seed=seed, baseline=baseline, cadence_min=cadence_min,
                 ndata=int(t.size), noise_ppm=noise_ppm, b=b)
    if snr is None and depth_ppm is None and rp_rs is None:
        snr = 15.0
    if snr == 0 or depth_ppm == 0 or rp_rs == 0:
        truth.update(period=math.nan, t0=math.nan, duration=math.nan, depth_ppm=0.0,
                     rp_rs=0.0, snr=0.0, n_transits=0)
        return SyntheticLightCurve(t, y, dy, truth)

    exp_time = exposure_time(cadence_min)
    inj = injection_for(t, sigma, period, t0, b=b, u=u, snr=snr, depth_ppm=depth_ppm,
                        rp_rs=rp_rs, exp_time=exp_time)
    model = transit_model(t, inj, exp_time)
    truth.update(truth_of(t, model, inj, sigma))
    return SyntheticLightCurve(t, y * model, dy, truth)


def injection_for(t, sigma, period, t0, *, b=0.0, u=DEFAULT_U, snr=None, depth_ppm=None,
                  rp_rs=None, exp_time=0.0, a_rs=None):
    """The ``Injection`` with the given Rp/R*, mid-transit depth, or expected SNR
    on times ``t`` with white noise ``sigma`` (exactly one of the three);
    ``a_rs`` None: a Sun-like star's."""
    if sum(x is not None for x in (depth_ppm, rp_rs, snr)) != 1:
        raise ValueError("give exactly one of depth_ppm, rp_rs, snr")

    def injection(k):
        return Injection(period=period, t0=t0, rp_rs=k, b=b, a_rs=a_rs, u=u)

    if snr is not None:  # depth scales the SNR nearly linearly: one trial, one rescale
        trial = injection(0.05)
        trial_snr = expected_snr(t, transit_model(t, trial, exp_time), sigma)
        if trial_snr == 0:
            raise NoTransitInData(f"a transit at P={period:.4g} d, T0={t0:.4g} falls in no data point")
        depth_ppm = mid_depth(trial) * snr / trial_snr * 1e6
    if rp_rs is None:
        rp_rs = rp_for_depth(depth_ppm * 1e-6, b=b, period=period, a_rs=a_rs, u=u)
    return injection(rp_rs)


def truth_of(t, model, injection, sigma):
    """What a search should find: period, first T0 in the data, T14, depth, SNR."""
    first = injection.t0 + injection.period * math.ceil((t.min() - injection.t0) / injection.period)
    transit_index = np.round((t[model < 1] - first) / injection.period)
    truth = asdict(injection)
    truth.pop("a_rs")
    truth.update(t0=first, duration=injection.duration, depth_ppm=mid_depth(injection) * 1e6,
                 snr=expected_snr(t, model, sigma), n_transits=int(np.unique(transit_index).size),
                 u=list(injection.u))
    return truth
