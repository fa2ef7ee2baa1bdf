"""Would a neighbouring period's best fit seed the threshold like an oracle? cpu backend counts.

Run 1 (as built) also records each period's best shift. Run 2 adds, as seeds, the exact gains of the
neighbour's best width (+-DW widths) at +-R strides around the neighbour's transit centre, mapped into
this period's fold (the centre sample's time moved by whole neighbour periods to mid-baseline).
Run 3: the oracle (each period's best gain as its threshold)."""
import sys, types, time
import numpy as np
sys.path.insert(0, "scripts")
from backends.implementations import cpu as cpu_mod
from gpu_timing import case_plan

# PYTHONPATH=. python neighbour_study.py CASE R DW SOURCE [debug]; SOURCE: prev (period p - 1) or a step S
# (the nearest of every S-th period)
case, R, DW, mode = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
base = open(cpu_mod.__file__).read().replace("cache=True", "cache=False")
base = base.replace("best_gain, best_index, best_depth = gains[q], wi,",
                    "best_gain, best_index, best_depth = gains[q], wi + 65536 * queue[q],", 1)
base = base.replace("            gain[p], index[p], depth[p] = scan_period(",
                    "            counts[p, 0] = NB_K[p]\n            counts[p, 6] = NB_W[p]\n            counts[p, 7] = ORACLE_BITS[p]\n"
                    "            gain[p], index[p], depth[p] = scan_period(", 1)
seed_code = """    kc = count[0]
    wn = count[6]
    count[0] = 0
    count[6] = 0
    if kc >= 0:
        for wi in range(max(lo, wn - DW), min(hi, wn + DW + 1)):
            d, stride = widths[wi], strides[wi]
            n_shifts = (shift_end(m, n, d, stride) - 1) // stride + 1
            aa = a[offsets[wi]:offsets[wi + 1]]
            s0 = ((kc - aa.size // 2) % n) // stride
            for r in range(-R, R + 1):
                s2 = s0 + r
                if s2 < 0 or s2 >= n_shifts:
                    continue
                i2 = s2 * stride
                box2 = 1.0 - (cs[i2 + d] - cs[i2]) / d
                if box2 > depth_min:
                    threshold = max(threshold, exact_gain(aa, rw, fw, i2, box2 * (overshoot[wi] / signal_depth), w_uniform * sum_a2[wi]))
                    count[SEED_DOTS] += 1
                    count[EXACT_MACS] += aa.size
    if ORACLE_ON[0]:
        threshold = max(threshold, count[7:8].view(np.float64)[0])
    count[7] = 0
    floor = threshold - pad * threshold
"""
base = base.replace("    floor = threshold - pad * threshold\n", seed_code, 1)

plan, periods = case_plan(case)
periods = np.asarray(periods)
t = plan.lc.t
n = t.size
P = len(periods)

def run(nb_k, nb_w, oracle_bits, on):
    mod = types.ModuleType("cpu_nb"); sys.modules["cpu_nb"] = mod
    mod.__dict__.update(NB_K=nb_k, NB_W=nb_w, ORACLE_BITS=oracle_bits, ORACLE_ON=np.array([on]), R=R, DW=DW)
    mod.__file__ = cpu_mod.__file__
    exec(compile(base, "cpu_nb", "exec"), mod.__dict__)
    inner = mod.search_periods
    got = []
    def wrapped(*a):
        g, idx, dep, c = inner(*a)
        got.append((g.copy(), idx.copy()))
        return g, np.where(idx >= 0, idx % 65536, -1), dep, c
    mod.search_periods = wrapped
    b = mod.CPUBackend()
    t0 = time.time(); b.search(plan, periods); dt = time.time() - t0
    g = np.concatenate([x[0] for x in got]); idx = np.concatenate([x[1] for x in got])
    return g, idx, dict(b.work), dt

none = np.full(P, -1, np.int64)
g1, idx1, w1, dt1 = run(none, none, np.zeros(P, np.int64), False)
print(f"{case}: {P} periods, n={n}; as built {dt1:.2f} s")
tp = plan.templates
offs = tp.offsets
def order_of(period):
    x = t * (1.0 / period); ph = x - np.floor(x)
    o = np.argsort(ph, kind="stable")
    return o, ph[o]
orders = [None] * P
def get(p):
    if orders[p] is None:
        orders[p] = order_of(periods[p])
    return orders[p]
t_mid = 0.5 * (t.min() + t.max())
if mode == "prev":
    src = np.r_[1, np.arange(P - 1)]  # period p seeded by p - 1 (period 0 by period 1)
else:
    step = int(mode)  # a first pass over every step-th period seeds the rest from the nearest of them
    firsts = np.arange(0, P, step)
    src = firsts[np.clip(np.rint(np.arange(P) / step).astype(int), 0, len(firsts) - 1)]
nb_k = np.full(P, -1, np.int64); nb_w = np.full(P, -1, np.int64)
for p in range(P):
    q = src[p]
    if q == p or idx1[q] < 0:
        continue
    wi, i = idx1[q] % 65536, idx1[q] // 65536
    L = offs[wi + 1] - offs[wi]
    oq, _ = get(q)
    ts = t[oq[(i + L // 2) % n]]
    Tc = ts + np.rint((t_mid - ts) / periods[q]) * periods[q]
    op, php = get(p)
    x = Tc / periods[p]
    kc = int(np.searchsorted(php, x - np.floor(x))) % n
    nb_k[p], nb_w[p] = kc, wi
g2, idx2, w2, dt2 = run(nb_k, nb_w, np.zeros(P, np.int64), False)
assert np.array_equal(g1, g2) and np.array_equal(idx1 % 65536, idx2 % 65536), "neighbour seeds changed a result"
print(f"R={R} DW={DW} source={mode}: results identical to as built")
if len(sys.argv) > 5:  # debug: how alike the neighbours' best fits are
    wi1, i1 = idx1 % 65536, idx1 // 65536
    L = offs[wi1 + 1] - offs[wi1]
    dist = np.abs(((i1 - (nb_k - L // 2) % n) + n // 2) % n - n // 2)
    ok = nb_k >= 0
    print("same width", (wi1 == nb_w)[ok].mean(), "median |shift - target| samples", np.median(dist[ok]),
          "within 2 strides", (dist[ok] <= 2 * tp.strides[wi1[ok]]).mean())
else:
    g3, idx3, w3, dt3 = run(none, none, g1.view(np.int64).copy(), True)
    for k in ("depth_pass", "coarse_pass", "fine_pass", "seed_dots", "exact_macs"):
        print(f"{k:12s} {w1[k]:>14,} {w2[k]:>14,} ({w2[k]/w1[k]:.3f})  oracle {w3[k]:>14,} ({w3[k]/w1[k]:.3f})")
