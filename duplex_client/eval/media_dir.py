"""A media directory as eval items: every video or audio file below it, one item each."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

from duplex_client.eval.item import EvalItem, ItemSetError, id_problem

#: Media files a directory input takes, by lower-case extension: the containers and audio
#: files `stream` reads (libsndfile, or PyAV for the rest).
VIDEO_EXTENSIONS: Final = (".mp4", ".mov", ".mkv", ".webm", ".m4v", ".avi")
AUDIO_EXTENSIONS: Final = (
    ".wav", ".flac", ".mp3", ".ogg", ".oga", ".opus", ".m4a", ".aac", ".aif", ".aiff",
)  # fmt: skip


def read_media_dir(root: Path) -> list[EvalItem]:
    """One item per media file under `root` (hidden ones skipped), sorted by relative path."""
    found = sorted(_media_files(root), key=lambda pair: pair[0])
    if not found:
        kinds = ", ".join(VIDEO_EXTENSIONS + AUDIO_EXTENSIONS)
        raise ItemSetError(f"{root}: no media files ({kinds})", keywords=())
    return [_media_item(rel, full) for rel, full in found]


def _media_files(root: Path) -> list[tuple[str, str]]:
    """(relative POSIX path, absolute path) of every media file under `root`, hidden skipped.

    Symlinked directories are followed, except one leading back to a directory being walked
    (it would never end).
    """
    top = os.path.abspath(root)
    found: list[tuple[str, str]] = []
    stack: list[tuple[str, tuple[str, ...], frozenset[tuple[int, int]]]] = [
        (top, (), frozenset({_inode(top)}))
    ]
    while stack:
        directory, parts, ancestors = stack.pop()
        try:
            with os.scandir(directory) as entries:
                listing = list(entries)
        except OSError as exc:
            raise ItemSetError(f"{directory}: {exc.strerror}", keywords=()) from None
        for entry in listing:
            if entry.name.startswith("."):
                continue
            if entry.is_dir():
                key = _inode(entry.path)
                if key not in ancestors:
                    stack.append((entry.path, (*parts, entry.name), ancestors | {key}))
            elif _media_kind(entry.name) is not None:
                found.append(("/".join((*parts, entry.name)), entry.path))
    return found


def _inode(path: str) -> tuple[int, int]:
    status = os.stat(path)
    return status.st_dev, status.st_ino


def _media_kind(name: str) -> str | None:
    suffix = os.path.splitext(name)[1].lower()
    if suffix in VIDEO_EXTENSIONS:
        return "input_video"
    if suffix in AUDIO_EXTENSIONS:
        return "input_audio"
    return None


def _media_item(rel: str, full: str) -> EvalItem:
    kind = _media_kind(rel)
    problem = id_problem(rel)
    if problem is not None:
        # A file name no bundle directory can take: a usable id, the item failed.
        return EvalItem(id=_usable_id(rel), error=problem)
    if not os.path.isfile(full):
        return EvalItem(id=rel, error=f"{kind} {rel}: no such file (a broken link)")
    if kind == "input_video":
        return EvalItem(id=rel, input_video=full)
    return EvalItem(id=rel, input_audio=full)


def _usable_id(rel: str) -> str:
    def ok(char: str) -> bool:
        return (
            char != "\\"
            and ord(char) >= 32
            and ord(char) != 127
            and not 0xD800 <= ord(char) < 0xE000
        )

    return "".join(char if ok(char) else "_" for char in rel)
