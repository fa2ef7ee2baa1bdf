"""asv benchmarks of the workbench (``asv.conf.json``; run with ``asv run
--python=same``), the per-GPU variant sweep (``python -m benchmarks.select``)
and the scaling figure (``python -m benchmarks.figure``).

Modules named ``bench_*`` hold the asv benchmarks; the rest are helpers asv
imports but finds no benchmarks in. Nothing here creates a GPU context at
import time.
"""

import os
import sys

# asv imports this package with a clean environment (PYTHONPATH dropped) and
# the project need not be installed: make ``backends`` and ``datasets``
# importable from the checkout, after the directories of
# ``TLS_BENCH_PYTHONPATH`` (wheels installed with --target on the GPU machine).
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
for _path in [*os.environ.get("TLS_BENCH_PYTHONPATH", "").split(os.pathsep), REPO][::-1]:
    if _path and _path not in sys.path:
        sys.path.insert(0, _path)
