"""Whole files or none: each is written to a hidden temporary file beside its
target and renamed over it, so a crash, an interrupt or another process reading
at the same time sees the old file or the whole new one, never a part. The file
gets the permissions any new file gets (0666 less the umask, e.g. 0644), not
tempfile's private 0600."""

from __future__ import annotations

import os
import secrets
from pathlib import Path


def write_atomic(path, write) -> None:
    """``write(tmp)`` fills the temporary file ``tmp`` (a Path), which then replaces
    ``path``; on failure the temporary file is removed and the error raised."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.{secrets.token_hex(8)}.tmp"
    os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
