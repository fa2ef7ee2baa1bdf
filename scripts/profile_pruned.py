"""One warm search of a timing case (``gpu_timing.CASES``) by ``pruned``, or
``--backend`` another (e.g. ``tensor``), for Nsight Compute (``ncu -k
regex:pruned python scripts/profile_pruned.py k2``), or with
``--clocks``: where ``pruned_period``'s (with ``--backend tensor``, the
tensor kernel's) SM cycles go, stage by stage (a
``-DSTAGE_CLOCKS`` build; its clock reads cost a little time of their own;
in the global layout ``pruned_scan``'s coarse stage and flushes, the other
stages being kernels with event times of their own; ``pruned_period``'s
warps run their fine rounds inside its coarse stage, so its flushes' fine
stage is only the last round of each period),
or with ``--host N``: where the host's part of N warm searches goes (cProfile,
by own time; the wall clock beside the kernels' event time). ``--clocks`` is
``pruned``'s and ``tensor``'s alone."""

import argparse
import cProfile
import os
import pstats
import time

import numpy as np

import backends
from gpu_timing import case_plan  # scripts/ is on sys.path when run as a script

STAGES = ("fold and sort", "prefix sums", "seeds", "row gate", "coarse stage", "flushes")
FOLD_PARTS = ("fold: phases", "fold: bucket sort", "fold: gather")
COARSE_PART = "coarse: warp 0's fine rounds"  # thread 0's own cycles: warp 0's share, not the block's
FLUSH_PARTS = ("flushes: fine stage", "flushes: exact gains")
SLOTS = (FOLD_PARTS[0], "prefix sums", "seeds", "coarse stage", "flushes", *FLUSH_PARTS, "flush count",
         *FOLD_PARTS[1:], "row gate", COARSE_PART)  # pruned.cu's clock slots
TENSOR_SLOTS = ("fold: phases and order", "fold: gather", "fold: prefix sums", "screen", "last re-checks",
                "rest", "periods", "screen: mean warp's own", "last re-checks: mean warp's own", "period, whole",
                "block's life")  # tensor_screen.cu's


def stage_cycles(backend, plan, periods) -> np.ndarray:
    """SM cycles per clock slot of one search of ``periods``, summed over blocks."""
    import pycuda.driver as cuda

    block = backend.search_block(plan)
    with backend.context():
        clocks, size = backend.module(block).get_global("stage_clocks")
        cuda.memset_d8(clocks, 0, size)
    backend.search(plan, periods)
    with backend.context():
        cycles = np.empty(size // 8, np.uint64)
        cuda.memcpy_dtoh(cycles, clocks)
    return cycles


def named(cycles) -> dict:
    """The clock slots' sums by name, stages each followed by its parts: the
    fold its three, the coarse stage without the flushes, which its mark spans."""
    found = dict(zip(SLOTS, np.asarray(cycles, float)))
    found["fold and sort"] = sum(found[part] for part in FOLD_PARTS)
    found["coarse stage"] -= found["flushes"]
    order = (STAGES[0], *FOLD_PARTS, *STAGES[1:-1], COARSE_PART, STAGES[-1], *FLUSH_PARTS, "flush count")
    return {name: found[name] for name in order}


def tensor_named(cycles, warps) -> dict:
    """tensor_screen.cu's clock slots by name, per block and period (the
    warps' own per warp: their mean, beside the block's stage that waits for
    the slowest)."""
    found = dict(zip(TENSOR_SLOTS, np.asarray(cycles, float)))
    periods = found.pop("periods")
    return {name: c / periods / (warps if "warp" in name else 1) for name, c in found.items()}


def host_profile(backend, plan, periods, searches):
    """Per search: wall ms and the stages' event ms; then cProfile's top
    entries by own and by cumulative time."""
    backend.search(plan, periods)
    backend.timings.clear()
    start = time.perf_counter()
    for _ in range(searches):
        backend.search(plan, periods)
    wall = (time.perf_counter() - start) / searches
    stages = {k: round(1e3 * v / searches, 3) for k, v in backend.timings.items()}
    print(f"wall {1e3 * wall:.3f} ms per search; stages (ms per search): {stages}")
    profile = cProfile.Profile()
    profile.runcall(lambda: [backend.search(plan, periods) for _ in range(searches)])
    stats = pstats.Stats(profile)
    stats.sort_stats("tottime").print_stats(30)
    stats.sort_stats("cumulative").print_stats(40)


def pruned_report(cycles, backend, plan, periods):
    """pruned_period's stages: cycles a period and shares of the whole."""
    cycles = named(cycles)
    flushes = cycles.pop("flush count")
    total = sum(cycles[s] for s in STAGES)
    print(f"  {total / periods:.3g} SM cycles per period, {flushes / periods:.2f} flushes per period")
    for stage, c in cycles.items():
        print(f"  {stage:34s} {c / periods:12.4g} cycles/period  {100 * c / total:5.1f} %")


def tensor_report(cycles, backend, plan, periods):
    """tensor_screen.cu's stages: cycles a block's period."""
    for stage, c in tensor_named(cycles, backend.search_block(plan) // 32).items():
        print(f"  {stage:34s} {c:12.4g} cycles a block's period")


CLOCKED = {"pruned": pruned_report, "tensor": tensor_report}  # backends whose kernels have clock slots


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("case", nargs="?", default="k2")
    parser.add_argument("--clocks", action="store_true", help="stage cycles of the backend's kernel (pruned or tensor)")
    parser.add_argument("--host", type=int, default=0, metavar="N", help="profile N warm searches' host part")
    parser.add_argument("--backend", default="pruned")
    args = parser.parse_args()
    if args.clocks and args.backend not in CLOCKED:
        parser.error(f"--clocks reads a kernel's clock slots: only with --backend {' or '.join(CLOCKED)}")
    if args.clocks:
        os.environ["TLS_NVCC_FLAGS"] = (os.environ.get("TLS_NVCC_FLAGS", "") + " -DSTAGE_CLOCKS").strip()
    plan, periods = case_plan(args.case)
    backend = backends.get_backend(args.backend)
    backend.search(plan, periods[:64])  # compile outside the profiled launches
    if args.host:
        return host_profile(backend, plan, periods, args.host)
    if not args.clocks:
        backend.search(plan, periods)
        return
    print(f"{args.case}: {len(periods)} periods")
    CLOCKED[args.backend](stage_cycles(backend, plan, periods), backend, plan, len(periods))

if __name__ == "__main__":
    main()
