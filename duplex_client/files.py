"""Files a run or an eval leaves: written whole or not at all (temporary file, fsync, rename)."""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any


@contextlib.contextmanager
def atomic_file(target: Path, mode: str = "wb", **open_kw: Any) -> Iterator[IO[Any]]:
    """A file opened beside `target`, fsync'd and renamed over it when the block ends.

    A kill at any point leaves the old file or the new one, never a torn one; an error in
    the block leaves the old one and no temporary file. The file is created like the
    bundle's others (mode 0666 less the umask, not mkstemp's 0600).
    """
    tmp = target.with_name(f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, mode, **open_kw) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_text_atomic(target: Path, text: str, *, newline: str | None = None) -> None:
    """Write `text` (UTF-8) to `target` whole or not at all (see `atomic_file`)."""
    with atomic_file(target, "w", encoding="utf-8", newline=newline) as fh:
        fh.write(text)
