"""Files a run or an eval leaves: written whole or not at all (temporary file, fsync, rename)."""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path


def write_text_atomic(target: Path, text: str, *, newline: str | None = None) -> None:
    """Write `text` (UTF-8) beside `target`, fsync it, then rename it over `target`.

    A kill at any point leaves the old file or the new one, never a torn one. The file is
    created like the bundle's others (mode 0666 less the umask, not mkstemp's 0600).
    """
    tmp = target.with_name(f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline=newline) as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
