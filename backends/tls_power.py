"""transitleastsquares' own ``power()``, quiet and checked: the one place the
workbench calls it (front end, validation, scripts, benchmarks and tests)."""

from __future__ import annotations

import os
import warnings
from unittest import mock

from backends import inputs
from backends.interrupts import reraise_interrupt

# TLS warns about the mean flux; backends.inputs.clean warns with advice instead
MEAN_FLUX_WARNING = "Warning: The mean flux should be normalized"


def power(t, y, dy=None, *, persistent_pool=False, **options):
    """TLS's results of ``transitleastsquares(t, y, dy).power(**options)``, with
    its log and progress bar off unless asked for, after
    ``inputs.check_search`` (unknown options, a short baseline, a search over
    the size limits: errors before TLS builds anything). Ctrl-C is a
    KeyboardInterrupt, also when numba wrapped it in a SystemError.

    ``persistent_pool``: keep TLS's worker processes (``use_threads`` > 1) alive
    between calls, as TLS does by default; False (the default here) starts
    and ends them within the call (``TLS_PERSISTENT_POOL=0``), so that an
    interrupt never leaves idle workers for the exit to wait on.
    """
    from transitleastsquares import transitleastsquares

    inputs.check_search(t, options)
    return _quiet(lambda o: transitleastsquares(t, y, dy, verbose=o["verbose"]).power(**o),
                  options, persistent_pool)


def planned_power(plan, backend, *, persistent_pool=False):
    """``power()`` of a plan's model (``backends.grids.make_plan``) with its
    options and ``backend``: TLS's search and statistics on the plan's grids
    and templates, which it does not build again."""
    return _quiet(lambda o: plan.model.power(**o), {**plan.model.options, "backend": backend},
                  persistent_pool)


def _quiet(run, options, persistent_pool):
    options = {"verbose": False, "show_progress_bar": False, **options}
    pool = {} if persistent_pool else {"TLS_PERSISTENT_POOL": "0"}
    with warnings.catch_warnings(), mock.patch.dict(os.environ, pool):
        warnings.filterwarnings("ignore", message=MEAN_FLUX_WARNING)
        try:
            return run(options)
        except Exception as exc:  # Ctrl-C inside numba code comes out as a SystemError
            reraise_interrupt(exc)
            raise
