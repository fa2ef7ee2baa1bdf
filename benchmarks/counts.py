"""``python -m benchmarks.counts``: the deterministic counts of the CI cases,
as JSON, which the CI gate (``python -m benchmarks.gate``) compares exactly:
what the host plans (periods, durations, template widths, width windows and
the phase shifts of the exact scan), the GPU backends' host-side launch
plans, and the work counters ``backends.search(..., backend="cpu")`` reports
in ``results.meta["work"]``: any integer there becomes a metric by itself.

Not asv tracks: asv needs a benchmark's parameter names at import, and the
names of the work counters come from a search; a numba-parallel search at
import also breaks asv's forkserver (GNU OpenMP does not survive a fork).
"""

from __future__ import annotations

import json
import math
import numbers
import zlib

import numpy as np

from benchmarks.cases import SWEEPS, case

SEARCHED = [(n, p) for n in SWEEPS["ci"][0] for p in SWEEPS["ci"][1]]  # cpu searches: work counters
PLANNED = SEARCHED + [(4320, 10000), (100000, 10000)]  # host plans only: cheap at any size
# backends whose period batches follow from the plan alone (cupy's follow free device memory)
HOST_BATCHED = ("basic", "thrust", "numba")


def crc(array) -> int:
    """A checksum of an array's bytes: any change of any value changes it."""
    return zlib.crc32(np.ascontiguousarray(array).tobytes())


def integers(prefix: str, value) -> dict:
    """``{name: int}`` of the integers in ``value`` (an int, or dicts and
    sequences of them, named by key and index); anything else is left out."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return {prefix: int(value)}
    if isinstance(value, dict):
        return {k: v for key, item in value.items() for k, v in integers(f"{prefix}.{key}", item).items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return {k: v for i, item in enumerate(value) for k, v in integers(f"{prefix}[{i}]", item).items()}
    return {}


def launch_plans(plan, periods, lo, hi) -> dict:
    """Kernel launches of ``simple`` (one per pack) and period batches of the
    backends in ``HOST_BATCHED``, for one search, from their host code."""
    from backends import packing
    from backends.registry import backend_class
    from backends.implementations import simple

    job = packing.Job(simple.packed_curve(plan), periods, lo, hi)
    out = {"simple launches": sum(1 for _ in packing.packs([job], simple.LAUNCH_MACS, simple.MEMORY_BUDGET))}
    for name in HOST_BATCHED:
        out[f"{name} batches"] = math.ceil(periods.size / backend_class(name)().max_batch_periods(plan))
    return out


def plan_counts(ndata: int, nperiods: int) -> dict:
    """A case's grids (the whole period grid; its duration grid), template
    widths, then over its ``nperiods`` periods the width windows, the phase
    shifts the exact scan visits and the launch plans."""
    import backends
    from backends.scan_jobs import shift_counts, window_sum

    c = case(ndata, nperiods)
    plan, grid = backends.make_plan(c.t, c.y, c.dy, **c.options)
    durations = backends.TLSBackend.duration_grid(grid)
    tp = plan.templates
    lo, hi = plan.width_windows(c.periods)
    shifts = shift_counts(tp.widths, tp.strides, plan.lc.size + tp.maxwidth)
    return {"periods": grid.size, "periods crc32": crc(grid),
            "durations": durations.size, "durations crc32": crc(durations),
            "template widths": tp.widths.size, "template widths crc32": crc(tp.widths),
            "template samples": int(tp.lengths.sum()),
            "width windows": int(np.sum(hi - lo)), "phase shifts": window_sum(shifts, lo, hi),
            **launch_plans(plan, c.periods, lo, hi)}


def work_counts(ndata: int, nperiods: int) -> dict:
    """The integers of ``meta["work"]`` of a ``cpu`` search of the case (none
    where the backend reports no work)."""
    import backends

    c = case(ndata, nperiods)
    result = backends.search(c.t, c.y, c.dy, backend="cpu", **c.options)
    return integers("cpu work", result.meta.get("work", {}))


def counts() -> dict:
    """``{"<ndata>x<nperiods> <what>": int}``: plans of the PLANNED cases,
    work of the SEARCHED ones."""
    out = {}
    for cases, collect in ((PLANNED, plan_counts), (SEARCHED, work_counts)):
        for n, p in cases:
            out.update({f"{n}x{p} {name}": value for name, value in collect(n, p).items()})
    return out


if __name__ == "__main__":
    print(json.dumps(counts(), indent=1, sort_keys=True))
