"""Cheaper seeds for the threshold: cpu backend counts (coarse_pass, fine_pass, exact macs) per scheme.

MODE 0: today's (every width's deepest box, its exact gain).
MODE 1: every STEP-th width of the period's window (from the widest) seeds as today.
MODE 2: one scan: the deepest box of width REF (the period window's widest, STEP ignored), then every
        width's exact gain at the shift centred on that box (rounded to its stride, if it passes the depth filter).
MODE 3: no seeds (threshold 0): how much the seeds matter at all."""
import sys, types, time
import numpy as np
sys.path.insert(0, "scripts")
from backends.implementations import cpu as cpu_mod
from backends import pruning
from gpu_timing import case_plan

case, mode, step, every = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
src = open(cpu_mod.__file__).read().replace("cache=True", "cache=False")
old = """        if at >= 0:
            aa = a[offsets[wi]:offsets[wi + 1]]"""
assert src.count(old) == 1
src = src.replace(old, """        seed_at[wi - lo] = at
        seed_box[wi - lo] = deepest
        if MODE == 4:
            deepest, at = -np.inf, -1
            for s4 in range(0, n_shifts, STEP):
                i4 = s4 * stride
                box4 = 1.0 - (cs[i4 + d] - cs[i4]) / d
                if box4 > depth_min and box4 > deepest:
                    deepest, at = box4, i4
        if at >= 0 and MODE == 4:
            aa = a[offsets[wi]:offsets[wi + 1]]
            threshold = max(threshold, exact_gain(aa, rw, fw, at, deepest * (overshoot[wi] / signal_depth), w_uniform * sum_a2[wi]))
            count[SEED_DOTS] += 1
        if at >= 0 and (MODE == 0 or (MODE == 1 and (hi - 1 - wi) % STEP == 0)):
            aa = a[offsets[wi]:offsets[wi + 1]]""")
old = """    count[DEPTH_PASS] += starts[hi - lo]
"""
assert src.count(old) == 1
src = src.replace(old, old + """    if MODE == 2 and seed_at[hi - 1 - lo] >= 0:
        dr = widths[hi - 1]
        centre = seed_at[hi - 1 - lo] + 0.5 * dr
        for wi in range(lo, hi):
            d, stride = widths[wi], strides[wi]
            n_shifts = (shift_end(m, n, d, stride) - 1) // stride + 1
            s2 = int(round((centre - 0.5 * d) / stride))
            if s2 < 0 or s2 >= n_shifts:
                continue
            i2 = s2 * stride
            box2 = 1.0 - (cs[i2 + d] - cs[i2]) / d
            if box2 > depth_min:
                aa = a[offsets[wi]:offsets[wi + 1]]
                threshold = max(threshold, exact_gain(aa, rw, fw, i2, box2 * (overshoot[wi] / signal_depth), w_uniform * sum_a2[wi]))
                count[SEED_DOTS] += 1
                count[EXACT_MACS] += aa.size
""")
src = src.replace("    threshold = 0.0\n    starts[0] = 0\n", "    threshold = 0.0\n    starts[0] = 0\n    seed_at = np.empty(hi - lo, np.int64)\n    seed_box = np.empty(hi - lo)\n", 1)
mod = types.ModuleType("cpu_seed"); sys.modules["cpu_seed"] = mod
mod.__dict__.update(MODE=mode, STEP=step)
mod.__file__ = cpu_mod.__file__
exec(compile(src, "cpu_seed", "exec"), mod.__dict__)
plan, periods = case_plan(case)
periods = periods[::every]
b = mod.CPUBackend()
t0 = time.perf_counter()
st = b.search(plan, periods)
w = {k: int(v) for k, v in b.work.items()}
print(case, "mode", mode, "step", step, "periods", periods.size, "s %.1f" % (time.perf_counter() - t0),
      {k: w[k] for k in ("depth_pass", "coarse_pass", "fine_pass", "seed_dots", "exact_macs")}, flush=True)
np.save(f"/tmp/seed/chi2_{case}_{mode}_{step}.npy", st.chi2)
