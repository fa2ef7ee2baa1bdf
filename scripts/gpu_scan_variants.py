"""Time compile-time variants of the float32 chi2 scan (phase_scan.cuh) on the
K2-like case in one process: simple and thrust with other BLOCK,
SHIFTS_PER_THREAD, launch sizes, other macros, or the sources of another commit (earlier
runs also tried __launch_bounds__ minimum blocks, see reports/gpu/NOTES.md).

    python scripts/gpu_scan_variants.py build DIR [--ref-src DIR]   # cubins, no GPU needed
    python scripts/gpu_scan_variants.py time DIR [--out FILE]        # warm timings + agreement
    python scripts/gpu_scan_variants.py profile DIR NAME...          # one launch each, for ncu

A variant's cubins are built beforehand (``build``, where nvcc runs) and
loaded by key, so the device spends no time compiling. Agreement is against
the first variant's per-period chi2 (reference sources: the last exact commit).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# name: (backend, sources ("ref" or "new"), block, SHIFTS_PER_THREAD, launch MACs, extra defines)
VARIANTS = {
    "s_v3": ("simple", "ref", 256, 8, 1.2e11, {}),
    "s_round4": ("simple", "new", 256, 8, 1.2e11, {}),
    "s_round2": ("simple", "new", 256, 8, 1.2e11, {"TILE_ROUND": 2}),
    "t_v3": ("thrust", "ref", 256, 8, 1.2e11, {}),
    "t_chunks": ("thrust", "new", 256, 8, 1.2e11, {}),
    "t_round4": ("thrust", "new", 256, 8, 1.2e11, {"TILE_ROUND": 4}),
}
SOURCES = {"simple": ("simple.cu",), "thrust": ("thrust.cu",)}


def defines(name):
    backend, _, block, spt, _, extra = VARIANTS[name]
    d = {"BLOCK": block, "SHIFTS_PER_THREAD": spt, **extra}
    if backend == "thrust":
        d["ITEMS"] = 8
    return d


def cubin_name(tag, source, defs):
    key = json.dumps([tag, source, sorted(defs.items())])
    return hashlib.sha1(key.encode()).hexdigest()[:16] + ".cubin"


def build(out, ref_src):
    out.mkdir(parents=True, exist_ok=True)
    for name, (backend, tag, *_rest) in VARIANTS.items():
        src_dir = Path(ref_src) if tag == "ref" else ROOT / "backends" / "cuda"
        defs = defines(name)
        for source in SOURCES[backend]:
            target = out / cubin_name(tag, source, defs)
            if target.exists():
                continue
            cmd = ["nvcc", "-cubin", "-arch=sm_90", "-std=c++17", f"-I{src_dir}", "-o", str(target)]
            cmd += [f"-D{k}={v}" for k, v in sorted(defs.items())] + [str(src_dir / source)]
            subprocess.run(cmd, check=True)
            print(name, source, target.name, flush=True)


def backend_for(name, cubins):
    """A backend instance of variant ``name`` loading prebuilt cubins."""
    from backends.implementations import pycuda_backends as pb

    kind, tag, block, spt, macs, _ = VARIANTS[name]
    pb.SHIFTS_PER_THREAD = spt
    pb.LAUNCH_MACS = macs
    pb.nvcc_cubin = lambda source, arch, defs, options=(): (
        cubins / cubin_name(tag, source, defs)).read_bytes()
    cls = pb.SimpleBackend if kind == "simple" else pb.ThrustBackend
    b = cls()
    b.block_size = block
    b.defines = {k: v for k, v in defines(name).items() if k != "BLOCK"}
    return b


def case():
    import backends
    from datasets import synthetic

    lc = synthetic.simulate(seed=1, start=3000.0, preset="k2", ndata=4320)
    return backends.make_plan(lc.t, lc.y, lc.dy)


def use_variant(name, cubins):
    """A backend of variant ``name``, with an empty kernel cache (the two
    source trees share cache keys)."""
    from backends.implementations import pycuda_backends as pb

    pb.KERNELS.clear()
    return backend_for(name, cubins)


def time_all(cubins, names, repeats, out):
    plan, periods = case()
    rows, ref = [], None
    for name in names:
        b = use_variant(name, cubins)
        start = time.perf_counter()
        first = b.search(plan, periods)
        cold = time.perf_counter() - start
        warm, stages = [], None
        for _ in range(repeats):
            b.timings.clear()
            start = time.perf_counter()
            res = b.search(plan, periods)
            warm.append(time.perf_counter() - start)
            stages = dict(b.timings)
        chi2 = np.asarray(res.chi2, float)
        rows_ = np.asarray(res.rows)
        if ref is None:
            ref = (chi2, rows_)
        rel = float(np.max(np.abs(chi2 - ref[0]) / np.abs(ref[0])))
        mism = float(np.mean(rows_ != ref[1]))
        same_first = bool(np.array_equal(np.asarray(first.chi2), chi2))
        row = dict(variant=name, cfg=VARIANTS[name], cold_s=cold, warm_median_s=float(np.median(warm)),
                   warm_min_s=float(np.min(warm)), stages={k: round(v, 5) for k, v in stages.items()},
                   max_rel_chi2_vs_first=rel, row_mismatch_vs_first=mism, repeatable=same_first)
        rows.append(row)
        print(json.dumps(row), flush=True)
    print(f"\n{'variant':<20} {'warm med ms':>11} {'min ms':>8} {'fold ms':>8} {'scan ms':>8}"
          f" {'rel chi2':>9} {'rows!=':>7}")
    for r in rows:
        s = r["stages"]
        print(f"{r['variant']:<20} {1e3 * r['warm_median_s']:11.2f} {1e3 * r['warm_min_s']:8.2f} "
              f"{1e3 * s.get('fold_sort', 0):8.2f} {1e3 * s.get('chi2_scan', 0):8.2f} "
              f"{r['max_rel_chi2_vs_first']:9.1e} {r['row_mismatch_vs_first']:7.4f}")
    if out:
        Path(out).write_text(json.dumps(rows, indent=1))


def profile(cubins, names):
    """One search over a sixth of the periods (one scan launch) per variant."""
    plan, periods = case()
    sub = periods[::6]
    for name in names:
        b = use_variant(name, cubins)
        b.search(plan, sub)
        print("profiled", name, flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=("build", "time", "profile"))
    ap.add_argument("cubins", type=Path)
    ap.add_argument("names", nargs="*")
    ap.add_argument("--ref-src", default=None)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    names = args.names or list(VARIANTS)
    if args.mode == "build":
        build(args.cubins, args.ref_src)
    elif args.mode == "time":
        time_all(args.cubins, names, args.repeats, args.out)
    else:
        profile(args.cubins, names)


if __name__ == "__main__":
    main()
