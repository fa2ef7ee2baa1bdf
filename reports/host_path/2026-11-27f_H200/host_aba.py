"""The host's CPU time per K2-like light curve (``benchmarks.host_path``: 64
curves, ``pruned``'s statistics replayed, lean and full, median of 7) and the
process's context switches per curve, in the tree on PYTHONPATH. Run once per
tree, alternating (new / old / new / old) in one device call:

    for t in . _ab . _ab; do (cd $t && PYTHONPATH=/tmp/site:$PWD python3 $OLDPWD/host_aba.py); done
"""

import json
import os
import resource

import backends
from benchmarks.host_path import Replay, host_seconds, k2_like


def switches():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_nvcsw + r.ru_nivcsw


curves = k2_like(64)
replay = Replay(curves, backends.get_backend("pruned"))
out = {"tree": os.getcwd()}
for lean in (True, False):
    before = switches()
    seconds = host_seconds(curves, replay, lean=lean, repeats=7)
    out["lean" if lean else "full"] = {"cpu_ms": seconds["cpu_s_per_curve"] * 1e3,
                                       "switches_per_curve": (switches() - before) / (8 * len(curves))}
print(json.dumps(out))
