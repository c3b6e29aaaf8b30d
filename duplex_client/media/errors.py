"""Media errors: one-line messages that name the file and the problem."""

from __future__ import annotations

import contextlib
import os
import warnings
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from pathlib import Path

from duplex_client.protocol.errors import DuplexClientError

#: The first bytes of an ISO-BMFF (mp4, mov, m4a) file carry an `ftyp` box at offset 4.
_FTYP = b"ftyp"


class MediaError(DuplexClientError):
    """A media file cannot be used; `str(err)` is one line: `<path>: <problem>`."""

    def __init__(self, path: str | os.PathLike[str], problem: str) -> None:
        self.path = os.fspath(path)
        self.problem = " ".join(problem.split())
        super().__init__(f"{self.path}: {self.problem}")


class MediaWarning(UserWarning):
    """Something was wrong with a file but part of it was usable (e.g. a truncated clip).

    `str(warning)` is one line: `<path>: <problem>`.
    """

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(str(message).split()))


#: Where media warnings go instead of `warnings.warn` while a run collects them.
_SINK: ContextVar[Callable[[MediaWarning], None] | None] = ContextVar(
    "duplex_media_warnings", default=None
)


@contextlib.contextmanager
def collect_media_warnings(sink: Callable[[MediaWarning], None]) -> Iterator[None]:
    """Within this context (and tasks started in it) media warnings go to `sink`.

    A run records them in its result (`warnings`), so they are shown once, by whoever shows
    the result, and never through Python's default warning display.
    """
    token = _SINK.set(sink)
    try:
        yield
    finally:
        _SINK.reset(token)


@contextlib.contextmanager
def tee_media_warnings() -> Iterator[list[MediaWarning]]:
    """Within this block media warnings go where they would anyway, and into the list yielded.

    The plan cache keeps what a decode warned about, to say it again when it serves the decode.
    """
    seen: list[MediaWarning] = []
    outer = _SINK.get()

    def sink(warning: MediaWarning) -> None:
        seen.append(warning)
        if outer is not None:
            outer(warning)
        else:
            warnings.warn(warning, stacklevel=4)

    token = _SINK.set(sink)
    try:
        yield seen
    finally:
        _SINK.reset(token)


def warn_media(warning: MediaWarning, stacklevel: int = 2) -> None:
    """Issue a media warning: to the collecting run if there is one, else `warnings.warn`."""
    sink = _SINK.get()
    if sink is not None:
        sink(warning)
    else:
        warnings.warn(warning, stacklevel=stacklevel + 1)


def check_file(path: str | os.PathLike[str]) -> Path:
    """The path as a `Path` if it is a non-empty regular file, else a `MediaError`."""
    p = Path(path)
    if not p.exists():
        raise MediaError(path, "no such file")
    if p.is_dir():
        raise MediaError(path, "is a directory, not a media file")
    try:
        size = p.stat().st_size
    except OSError as exc:
        raise MediaError(path, f"cannot read file ({exc.strerror or exc})") from exc
    if size == 0:
        raise MediaError(path, "empty file (0 bytes)")
    if not os.access(p, os.R_OK):
        raise MediaError(path, "permission denied")
    return p


def av_reason(exc: BaseException) -> str:
    """The short reason carried by a PyAV/FFmpeg exception (its strerror, else its text)."""
    reason = getattr(exc, "strerror", None)
    return str(reason) if reason else (str(exc) or type(exc).__name__)


def open_failure(path: str | os.PathLike[str], exc: BaseException) -> MediaError:
    """The `MediaError` for a file PyAV could not open, telling a cut MP4 from a non-media file."""
    reason = av_reason(exc)
    if _looks_like_mp4(path):
        return MediaError(path, f"truncated or damaged MP4/MOV: its index is missing ({reason})")
    return MediaError(path, f"not a media file PyAV can read ({reason})")


def _looks_like_mp4(path: str | os.PathLike[str]) -> bool:
    try:
        with open(path, "rb") as fh:
            head = fh.read(12)
    except OSError:
        return False
    return head[4:8] == _FTYP
