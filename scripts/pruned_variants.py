"""``pruned_period``'s launch shapes timed against one another in one process,
on the K2-like timing case (``scripts/gpu_timing.py``'s): threads per block
and shifts per thread at a time in the coarse stage (``PERIOD_AT_ONCE``), and
any other of ``pruned.cu``'s defines after a colon (``512x2:EXACT_LANES=4``) and
the backend's options in lower case (``512x2:CHUNK=2048:fine_bound=constant``), each
checked against the ``cpu`` backend (per-period chi2 within 1e-10, the same
rows) before it is timed, rounds alternating so that the machine's drift
falls on every variant alike. Scan time (the kernel by CUDA events where the
backend records it), search wall time.
``--same-counts`` names work counters every variant must share with the
first (a change meant to skip work without changing what survives: a gate
that leaves ``depth_pass`` lower must leave ``coarse_pass`` alone).
With ``--backend tensor``, its kernels' shape (both alike: ``--case k2w`` times
``tensor_search_w``): threads per block and tiles of 128 shifts per job
(``384x4``; ``tensor_screen.cu``'s defines after a colon).

    python scripts/pruned_variants.py [--variants 512x2,640x1,512x2:EXACT_LANES=4] [--rounds 5] [--repeats 5]
                                      [--case k2] [--same-counts coarse_pass,fine_pass] [--out FILE.json]
    python scripts/pruned_variants.py --backend tensor --variants 384x2,384x4,256x2:MIN_BLOCKS=3
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

import backends
from backends import contract, pruning
from backends.implementations import pruned as module
from backends.implementations import tensor
from gpu_timing import case_plan


def chunk(block):
    """Queue places: the backend's up to 512 threads, then 4,096: within 48 KiB
    of static shared memory beside the jobs and the warps' rings, and above
    pruned.cu's SURVIVOR_ROOM ((PERIOD_GRAB + 1) x block: 5 x block) up to 768 threads."""
    return module.PrunedBackend.chunk(block) if block <= 512 else 4096


def variant_backend(block, at_once, defines=None, options=None):
    """A ``pruned`` backend whose pruned_period runs ``block`` threads taking
    ``at_once`` shifts per thread at a time, compiled with ``defines`` too,
    made with ``options``."""
    extra = dict(defines or {})

    class Variant(module.PrunedBackend):
        shared_block = block

        def kernel_defines(self, b):
            own = super().kernel_defines(b)
            mine = {"PERIOD_AT_ONCE": at_once, "CHUNK": chunk(block), "PERIOD_KERNEL": 1}
            return {**own, **mine, **extra} if b == block else own

    return Variant(layout="shared", **(options or {}))


def tensor_variant(block, tiles, defines=None, options=None):
    """A ``tensor`` backend whose kernels run ``block`` threads taking
    ``tiles`` tiles a job, compiled with ``defines`` too, made with ``options``."""
    extra = dict(defines or {})

    class Variant(tensor.TensorBackend):
        shapes = {kernel: (block, tiles) for kernel in tensor.SHAPES}

        def kernel_defines(self, b):
            return {**super().kernel_defines(b), **extra}

    return Variant(**(options or {}))


# per backend: (its variant from parse_variant's fields, default variants, its work counters)
BACKENDS = {"pruned": (variant_backend, "512x2,512x1,640x1,768x1", pruning.COUNTERS),
            "tensor": (tensor_variant, "384x4,384x2", tensor.WORK)}


def parse_variant(spec):
    """``"512x2:EXACT_LANES=4:fine_bound=constant:fine_min=16"`` -> (512, 2,
    {"EXACT_LANES": 4}, {"fine_bound": "constant", "fine_min": 16}):
    upper-case keys are defines, lower-case ones the backend's options."""
    shape, *settings = spec.split(":")
    block, at_once = (int(x) for x in shape.split("x"))
    pairs = [d.split("=") for d in settings]
    return (block, at_once, {k: int(v) for k, v in pairs if k.isupper()},
            {k: int(v) if v.isdigit() else v for k, v in pairs if not k.isupper()})


def scan_seconds(timings) -> float:
    """A search's scan time: its kernel's by CUDA events where the backend
    records them (``chi2_scan.kernel``), else the scan stage's. Summing every
    ``chi2*`` stage, as before, counted the stage and its parts both."""
    return timings.get("chi2_scan.kernel", timings["chi2_scan"])


def differing_counts(works: dict, names) -> list:
    """The counters of ``names`` in which a variant of ``works`` (variant ->
    work summary, the first the reference) differs from the first, as
    "variant: name first -> its" lines."""
    (_, reference), *others = works.items()
    return [f"{v}: {name} {reference[name]} -> {work[name]}"
            for v, work in others for name in names if work[name] != reference[name]]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", choices=sorted(BACKENDS), default="pruned")
    ap.add_argument("--variants", help="BLOCKxAT_ONCE (tensor: BLOCKxTILES), comma-separated")
    ap.add_argument("--case", default="k2")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=5, help="warm searches per variant per round")
    ap.add_argument("--same-counts", default="", help="work counters every variant shares with the first")
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    make, default, counters = BACKENDS[args.backend]
    same = [name for name in args.same_counts.split(",") if name]
    unknown = sorted(set(same) - set(counters))
    if unknown:
        ap.error(f"--same-counts: no such counter {unknown}; counters: {', '.join(counters)}")
    plan, periods = case_plan(args.case)
    ref = backends.get_backend("cpu").search(plan, periods)
    variants = (args.variants or default).split(",")
    made, works = {}, {}
    for v in variants:
        b = made[v] = make(*parse_variant(v))
        contract.assert_exact(b.search(plan, periods), ref, f"{args.backend} {v} vs cpu")
        works[v] = pruning.work_summary(b.work, counters)  # one search's
        if args.backend == "pruned":
            works[v]["linear_bound"] = b.period_line(plan)
        print(f"{v}: exact against cpu; {works[v]}", flush=True)
    if differing := differing_counts(works, same):
        raise SystemExit("work counters that should be the same differ:\n" + "\n".join(differing))
    wall = {v: [] for v in variants}
    scan = {v: [] for v in variants}
    for _ in range(args.rounds):
        for v in variants:
            b = made[v]
            for _ in range(args.repeats):
                b.timings.clear()
                start = time.perf_counter()
                b.search(plan, periods)
                wall[v].append(time.perf_counter() - start)
                scan[v].append(scan_seconds(b.timings))
    rows = []
    for v in variants:
        row = {"variant": v, "wall_median_ms": 1e3 * float(np.median(wall[v])),
               "wall_min_ms": 1e3 * float(np.min(wall[v])), "scan_median_ms": 1e3 * float(np.median(scan[v])),
               "work": works[v]}
        rows.append(row)
        print(f"{row['variant']:>7}: wall median {row['wall_median_ms']:.2f} ms (min {row['wall_min_ms']:.2f}), "
              f"scan median {row['scan_median_ms']:.2f} ms", flush=True)
    if args.out:
        with open(args.out, "w") as fh:
            json.dump({"backend": args.backend, "case": args.case, "rounds": args.rounds, "repeats": args.repeats,
                       "rows": rows}, fh, indent=1)


if __name__ == "__main__":
    main()
