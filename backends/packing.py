"""Packs: many light curves of different lengths and grids in one kernel launch.

A launch of a per-(light curve, period) kernel (``simple_search``) reads one
byte buffer: a table of the pack's light curves (``CURVE``), one entry per
block (``BLOCK``: period, light curve, width window), the light curves'
samples and per-width tables concatenated, each light curve finding its own
at its offsets. Periods are cut into launches of bounded work (multiply-adds)
and bytes; a light curve's periods may span launches. Host-side numpy only,
so the layout is tested without a GPU; the kernel's structs must match
``CURVE`` and ``BLOCK`` (simple.cu asserts their sizes).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import numpy as np

CURVE = np.dtype([("depth_min", "f8"), ("signal_depth", "f8"), ("start", "i4"), ("n", "i4"),
                  ("m", "i4"), ("cap", "i4"), ("wbase", "i4")], align=True)
BLOCK = np.dtype([("period", "f8"), ("curve", "i4"), ("lo", "i4"), ("hi", "i4")], align=True)
ALIGN = 16  # every section starts on a float4 boundary
INPUTS = ("curves", "blocks", "t", "y", "w", "widths", "strides", "overshoot", "ta", "toff", "taps")
OUTPUTS = (("gain", np.float64), ("depth", np.float64), ("index", np.int32))
DTYPES = {"t": np.float64, "y": np.float64, "w": np.float64, "widths": np.int32, "strides": np.int32,
          "overshoot": np.float64, "ta": np.float32, "toff": np.int32, "taps": np.int32}


@dataclass(frozen=True)
class Curve:
    """One light curve as a packed launch reads it (built once per light curve):
    samples, per-width tables, float32 polyphase template tap pairs ``ta`` with
    each width's first tap ``toff`` and tap count ``taps``, the patched length
    ``m``, the polyphase capacity ``cap``, the block's shared bytes and the
    multiply-adds of each width's scan (the work estimate)."""

    t: np.ndarray
    y: np.ndarray
    w: np.ndarray
    widths: np.ndarray
    strides: np.ndarray
    overshoot: np.ndarray
    ta: np.ndarray
    toff: np.ndarray
    taps: np.ndarray
    m: int
    cap: int
    depth_min: float
    signal_depth: float
    shared: int
    width_macs: np.ndarray

    @property
    def nbytes(self) -> int:
        return sum(getattr(self, k).nbytes for k in INPUTS[2:]) + CURVE.itemsize + len(INPUTS) * ALIGN

    def period_macs(self, lo, hi) -> np.ndarray:
        """Multiply-adds per period of width windows [lo, hi)."""
        cum = np.concatenate([[0], np.cumsum(self.width_macs, dtype=np.int64)])
        return cum[hi] - cum[lo]


@dataclass(frozen=True)
class Job:
    """The periods of one light curve to search, with their width windows."""

    curve: Curve
    periods: np.ndarray
    lo: np.ndarray
    hi: np.ndarray


@dataclass(frozen=True)
class Piece:
    """Periods [start, stop) of job ``job`` are the pack's blocks from ``first``."""

    job: int
    start: int
    stop: int
    first: int


def layout(sizes) -> tuple[dict, int]:
    """Byte offsets of named sections of ``sizes`` bytes, each ALIGN-aligned, and the total."""
    offsets, end = {}, 0
    for name, size in sizes:
        offsets[name] = end
        end += -(-int(size) // ALIGN) * ALIGN
    return offsets, end


class Pack:
    """One launch: its input sections, their byte offsets, the dynamic shared
    memory of its largest block, where its blocks' results go and which jobs
    it completes (holds their last periods)."""

    def __init__(self, pieces, jobs):
        self.pieces = tuple(pieces)
        self.completes = tuple(p.job for p in self.pieces if p.stop == jobs[p.job].periods.size)
        used = list(dict.fromkeys(p.job for p in self.pieces))  # each light curve once
        slot = {j: k for k, j in enumerate(used)}
        curves = [jobs[j].curve for j in used]
        table = np.zeros(len(curves), CURVE)
        table["n"] = [c.t.size for c in curves]
        table["start"] = np.cumsum([0] + [c.t.size for c in curves[:-1]])
        table["wbase"] = np.cumsum([0] + [c.widths.size for c in curves[:-1]])
        for name in ("m", "cap", "depth_min", "signal_depth"):
            table[name] = [getattr(c, name) for c in curves]
        tap_base = np.cumsum([0] + [c.ta.size // 2 for c in curves[:-1]])  # (a, a*a) pairs
        blocks = np.zeros(sum(p.stop - p.start for p in self.pieces), BLOCK)
        for p in self.pieces:
            job, sl = jobs[p.job], slice(p.start, p.stop)
            into = blocks[p.first:p.first + p.stop - p.start]
            into["period"], into["lo"], into["hi"] = job.periods[sl], job.lo[sl], job.hi[sl]
            into["curve"] = slot[p.job]
        self.sections = {"curves": table, "blocks": blocks}
        for name, dtype in DTYPES.items():
            parts = [getattr(c, name) for c in curves]
            if name == "toff":  # first taps into the concatenated ta
                parts = [part + base for part, base in zip(parts, tap_base)]
            self.sections[name] = np.concatenate(parts).astype(dtype, copy=False)
        self.offsets, self.nbytes = layout((k, self.sections[k].nbytes) for k in INPUTS)
        self.blocks = blocks.size
        self.shared = max(c.shared for c in curves)
        self.out_offsets, self.out_nbytes = layout(
            (name, self.blocks * np.dtype(dt).itemsize) for name, dt in OUTPUTS)

    def write(self, buffer: np.ndarray) -> None:
        """Copy the input sections into ``buffer`` (uint8, at least ``nbytes``)."""
        for name, array in self.sections.items():
            raw = np.ascontiguousarray(array).view(np.uint8).ravel()
            buffer[self.offsets[name]:self.offsets[name] + raw.size] = raw

    def outputs(self, buffer: np.ndarray) -> dict:
        """Views of the per-block results (gain, depth, index) in ``buffer``."""
        return {name: np.frombuffer(buffer, dt, self.blocks, self.out_offsets[name])
                for name, dt in OUTPUTS}

    def scatter(self, buffer: np.ndarray, results: list) -> int:
        """Copy the pack's results into each job's arrays (``results[job][name]``);
        returns the number of periods."""
        out = self.outputs(buffer)
        for p in self.pieces:
            for name, _ in OUTPUTS:
                results[p.job][name][p.start:p.stop] = out[name][p.first:p.first + p.stop - p.start]
        return self.blocks


def packs(jobs, max_macs: float, max_bytes: int) -> Iterator[Pack]:
    """Packs covering every period of ``jobs`` in order, each of at most
    ``max_macs`` multiply-adds and ``max_bytes`` input bytes unless a single
    period exceeds them (a pack holds at least one period)."""
    pieces, macs, nbytes, blocks = [], 0, 0, 0
    for j, job in enumerate(jobs):
        cost = np.cumsum(job.curve.period_macs(job.lo, job.hi))
        start = 0
        while start < job.periods.size:
            room = (max_bytes - nbytes - job.curve.nbytes) // BLOCK.itemsize
            done = cost[start - 1] if start else 0
            stop = min(int(np.searchsorted(cost, done + max_macs - macs, side="right")),
                       start + max(0, int(room)))
            if stop <= start and pieces:
                yield Pack(pieces, jobs)
                pieces, macs, nbytes, blocks = [], 0, 0, 0
                continue
            stop = max(stop, start + 1)
            pieces.append(Piece(j, start, stop, blocks))
            macs += int(cost[stop - 1] - done)
            nbytes += job.curve.nbytes + (stop - start) * BLOCK.itemsize
            blocks += stop - start
            start = stop
    if pieces:
        yield Pack(pieces, jobs)


def empty_results(jobs) -> list:
    """Per job, the arrays ``Pack.scatter`` fills."""
    return [{name: np.zeros(job.periods.size, dt) for name, dt in OUTPUTS} for job in jobs]
