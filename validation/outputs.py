"""Where runs write by default: outside the source tree, so that running the
workbench never rewrites tracked files. ``$TLS_WORKBENCH_OUT`` if set, else
``$XDG_DATA_HOME/tls-workbench/runs`` (``~/.local/share/tls-workbench/runs``);
every command's ``--out`` chooses another folder."""

from __future__ import annotations

import os
from pathlib import Path

OUT_VARIABLE = "TLS_WORKBENCH_OUT"
HELP = f"output folder (default: ${OUT_VARIABLE} or ~/.local/share/tls-workbench/runs)"


def default_out() -> Path:
    """The folder runs write to when no ``--out`` is given."""
    if os.environ.get(OUT_VARIABLE):
        return Path(os.environ[OUT_VARIABLE])
    data = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(data) / "tls-workbench" / "runs"


def label(name: str) -> str:
    """A backend's or peer's name as it goes into file names ("peer:gtls" -> "peer-gtls")."""
    return name.replace(":", "-")
