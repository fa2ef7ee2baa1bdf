"""Injection-recovery validation of a backend against CPU transitleastsquares.

``python -m validation.recover --backend <name> --suite <quick|synthetic|k2|tess|all>``:
suites of cases (``cases``), the searches and their on-disk cache (``runs``,
``store``), per-case metrics and the summary (``metrics``), the tables,
figures and markdown report (``report``), written outside the source tree
(``outputs``), and how a run's processes end (``processes``).

``python -m validation.protocol --backend <name> --cadence <k2|tess2min|ffi10min|all>``:
the calibrated detection protocol per cadence: its light curves
(``protocol_cases``), the decision rule (``decision``) and its report
(``protocol_report``).
"""
