"""CPU study of the depth floor (twentieth session): per sampled period of a
timing case, the seed threshold T and, per width, the smallest scaled depth k
whose gain can reach T when the window's sum of u is w d k / kscale (uniform
weights, L = d) and its centred squares at most a per-width maximum (MODE:
"centred", the width's largest centred window; "squares", its largest sum of
squares; "pow2", the largest over windows of the next power of two; "blocksB",
over runs of ceil(L / B) + 1 blocks of B samples). Prints the fractions of
shifts that pass the depth filter, the floor and the one-piece bound (no
rounding pads), and of 32- and 64-shift groups with any floor passer.

    python reports/gpu/pruned_push_2026-11-27_H100/depth_floor_rejected/depth_floor_study.py pow2 k2 tess
"""
import sys, numpy as np
sys.path[:0] = [".", "scripts"]
from block_bound_study import sampled_folds
from gpu_timing import case_plan


def study(case, n_periods=60, seed=0):
    plan, periods = case_plan(case)
    tp, pc, lc = plan.templates, plan.templates.pieces, plan.lc
    w = lc.uniform_weight
    t = dict(shifts=0, listed=0, coarse=0, floor=0, floor_pass_coarse=0, widths=0, widths_skipped=0, lengths_differ=0)
    for (u, prefix, prefix2), widths, T in sampled_folds(plan, periods, n_periods, seed):
        for wi, shifts, box, k, listed, s, v in widths:
            d, c1, r1 = int(tp.widths[wi]), pc.mean[wi, 0], pc.rho[wi, 0]
            L = tp.offsets[wi + 1] - tp.offsets[wi]
            t["lengths_differ"] += int(L != d)
            a2 = w * pc.sum_a2[wi]
            kscale = tp.overshoot[wi] / tp.signal_depth
            surv = listed & (2 * k * (c1 * s + r1 * np.sqrt(v)) - k * k * a2 >= T)
            n2 = prefix2.size - 1
            if MODE == "centred":
                vmax = v.max()
            elif MODE == "squares":
                vmax = (prefix2[shifts + d] - prefix2[shifts]).max()
            else:
                Lb = 1 << int(np.ceil(np.log2(d)))
                ends = np.minimum(np.arange(n2 + 1) + Lb, n2)
                vmax = (prefix2[ends] - prefix2[:n2 + 1]).max()
            beta = 2 * c1 * w * d / kscale - a2
            g = 2 * r1 * np.sqrt(vmax)
            # smallest k >= 0 with beta k^2 + g k >= T
            if beta < 0 and g * g / (-4 * beta) < T:
                kT = np.inf
            elif beta == 0:
                kT = T / g
            else:
                disc = g * g + 4 * beta * T
                kT = (-g + np.sqrt(disc)) / (2 * beta) if beta != 0 else T / g
            passed = listed & (k >= kT)
            for G in (32, 64):
                ng = -(-passed.size // G)
                padded = np.zeros(ng * G, bool); padded[:passed.size] = passed
                t.setdefault(f"groups{G}", 0); t.setdefault(f"groups{G}_any", 0)
                t[f"groups{G}"] += ng; t[f"groups{G}_any"] += int(padded.reshape(ng, G).any(axis=1).sum())
            t["shifts"] += shifts.size; t["listed"] += int(listed.sum()); t["coarse"] += int(surv.sum())
            t["floor"] += int(passed.sum()); t["floor_pass_coarse"] += int((surv & ~passed).sum())
            t["widths"] += 1; t["widths_skipped"] += int(np.isinf(kT))
    return t

MODE = sys.argv[1]
for case in sys.argv[2:] or ["k2"]:
    r = study(case)
    print(case, {k: (v if not k.endswith("_any") else round(v / r[k[:-4]], 3)) for k, v in r.items()}, "listed/shifts %.3f floor/shifts %.3f coarse/shifts %.3f" % (r["listed"]/r["shifts"], r["floor"]/r["shifts"], r["coarse"]/r["shifts"]))
