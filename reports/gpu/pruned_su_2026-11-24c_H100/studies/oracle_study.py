"""How much a perfect threshold (the period's best gain) would prune beyond the seed: cpu backend counts."""
import sys, types, time
import numpy as np
sys.path.insert(0, "scripts")
import backends
from backends.implementations import cpu as cpu_mod
from gpu_timing import case_plan

src = open(cpu_mod.__file__).read().replace("cache=True", "cache=False")
src = src.replace("    floor = threshold - pad * threshold\n",
                  "    if ORACLE_ON[0]:\n        threshold = max(threshold, count[7:8].view(np.float64)[0])\n        count[7] = 0\n    floor = threshold - pad * threshold\n", 1)
src = src.replace("            gain[p], index[p], depth[p] = scan_period(",
                  "            counts[p, 7] = ORACLE_BITS[p]\n            gain[p], index[p], depth[p] = scan_period(", 1)
def extra_seeds(indent, first, last, shift, skip_zero):
    """Code that offers the exact gains of shifts ``shift`` (r from first to last) as seeds."""
    body = f"""for r in range({first}, {last} + 1):
    s2 = {shift}
    if {"r == 0 or " if skip_zero else ""}s2 < 0 or s2 >= n_shifts:
        continue
    i2 = s2 * stride
    box2 = 1.0 - (cs[i2 + d] - cs[i2]) / d
    if box2 > depth_min:
        threshold = max(threshold, exact_gain(aa, rw, fw, i2, box2 * (overshoot[wi] / signal_depth), w_uniform * sum_a2[wi]))
        count[SEED_DOTS] += 1
        count[EXACT_MACS] += aa.size
"""
    return "".join(indent + line + "\n" for line in body.splitlines())


DEPTH = "    count[DEPTH_PASS] += starts[hi - lo]"
R = int(sys.argv[3]) if len(sys.argv) > 3 else 0  # +-R strides around each width's deepest box
if R:
    old = "            count[EXACT_MACS] += aa.size\n" + DEPTH
    assert old in src
    src = src.replace(old, "            count[EXACT_MACS] += aa.size\n" + extra_seeds(" " * 12, -R, R, "at // stride + r", True) + DEPTH)
C = int(sys.argv[4]) if len(sys.argv) > 4 else 0  # every width at the best seed's centre, +-(C - 1) strides
if C:
    old = """            threshold = max(threshold, exact_gain(aa, rw, fw, at, k, w_uniform * sum_a2[wi]))
            count[SEED_DOTS] += 1"""
    assert old in src
    src = src.replace(old, """            g1 = exact_gain(aa, rw, fw, at, k, w_uniform * sum_a2[wi])
            if g1 > threshold:
                best_centre = at + 0.5 * aa.size
            threshold = max(threshold, g1)
            count[SEED_DOTS] += 1""")
    src = src.replace("    threshold = 0.0\n    starts[0] = 0\n", "    threshold = 0.0\n    best_centre = -1.0\n    starts[0] = 0\n")
    src = src.replace(DEPTH, """    if best_centre >= 0:
        for wi in range(lo, hi):
            d, stride = widths[wi], strides[wi]
            n_shifts = (shift_end(m, n, d, stride) - 1) // stride + 1
            aa = a[offsets[wi]:offsets[wi + 1]]
""" + extra_seeds(" " * 12, -(C - 1), C - 1, "int(round((best_centre - 0.5 * aa.size) / stride)) + r", False) + DEPTH, 1)
case = sys.argv[1]
plan, periods = case_plan(case)
periods = np.asarray(periods)
if len(sys.argv) > 2:
    periods = periods[::int(sys.argv[2])]
def run(oracle_bits, on):
    mod = types.ModuleType("cpu_oracle"); sys.modules["cpu_oracle"] = mod
    mod.__dict__["ORACLE_BITS"] = oracle_bits
    mod.__dict__["ORACLE_ON"] = np.array([on])
    mod.__file__ = cpu_mod.__file__
    exec(compile(src, "cpu_oracle", "exec"), mod.__dict__)
    inner = mod.search_periods
    got = []
    def wrapped(*a):
        r = inner(*a); got.append(r[0]); return r
    mod.search_periods = wrapped
    b = mod.CPUBackend()
    t0 = time.time(); stats = b.search(plan, periods); dt = time.time() - t0
    return np.concatenate(got), dict(b.work), dt
zeros = np.zeros(len(periods), np.int64)
stats, work, dt = run(zeros, False)
print("seed  ", dt, work)
gains = stats
stats2, work2, dt2 = run(gains.view(np.int64).copy(), True)
print("oracle", dt2, work2)
for k in work:
    if isinstance(work[k], (int, float)) and work[k]:
        print(f"{k:24s} {work[k]:>14} {work2[k]:>14} {work2[k]/work[k]:.3f}")
