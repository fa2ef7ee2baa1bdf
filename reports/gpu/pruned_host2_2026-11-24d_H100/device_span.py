"""A warm search's wall split by CUDA events: search start -> first stage start (host work before the
first launch, as the device sees it), first stage start -> last stage end (device span) against the sum
of stage times (the gaps between kernels), last stage end -> return (host after the device). Medians of 40."""
import sys, time
sys.path.insert(0, "scripts")
import numpy as np
import backends
from gpu_timing import case_plan
from backends.implementations import event_clock as E, pruned as P

rows = []
orig_settle, orig_upload, orig_search = E.EventClock.settle, P.PrunedBackend.upload, P.PrunedBackend.search
state = {}


def settle(clock):
    first, last = clock.spans[0][1], clock.spans[-1][2]
    last.synchronize()
    state["end_host"] = time.perf_counter()
    state["pre"] = first.time_since(state["e0"])
    state["span"] = last.time_since(first)
    state["stages"] = sum(end.time_since(start) for name, start, end in clock.spans if "." not in name)
    orig_settle(clock)


def upload(self, plan):
    with self.context():
        state["e0"] = E.mark()
    return orig_upload(self, plan)


E.EventClock.settle, P.PrunedBackend.upload = settle, upload
for case in sys.argv[1:] or ["tess", "k2"]:
    plan, periods = case_plan(case)
    be = backends.get_backend("pruned")
    for _ in range(3):
        be.search(plan, periods)
    out = []
    for _ in range(40):
        t0 = time.perf_counter(); be.search(plan, periods); t1 = time.perf_counter()
        out.append((1e3 * (t1 - t0), state["pre"], state["span"], state["stages"], 1e3 * (t1 - state["end_host"])))
    a = np.median(np.array(out), axis=0)
    print(f"{case}: wall {a[0]:.3f} ms = before first launch (device view) {a[1]:.3f} + device span {a[2]:.3f} "
          f"(stages {a[3]:.3f}, gaps {a[2] - a[3]:.3f}) + after (host, from the last event's wait) {a[4]:.3f}; "
          f"unexplained {a[0] - a[1] - a[2] - a[4]:.3f}")
