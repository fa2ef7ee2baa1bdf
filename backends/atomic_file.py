"""Whole files or none: each is written to a hidden temporary file beside its
target and renamed over it, so a crash, an interrupt or another process reading
at the same time sees the old file or the whole new one, never a part."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_atomic(path, write) -> None:
    """``write(tmp)`` fills the temporary file ``tmp`` (a Path), which then replaces
    ``path``; on failure the temporary file is removed and the error raised."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(Path(tmp))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
