"""What an eval runs: `EvalItem`s read from a directory, a manifest or a Full-Duplex-Bench tree."""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from duplex_client.usage import UsageError

#: Manifest columns with a meaning; every other column is carried to the summary unchanged.
KNOWN_COLUMNS = (
    "id",
    "input_video",
    "input_audio",
    "input_image",
    "tail_silence_s",
    "annotations",
    "instructions",
    "expected",
)

#: Media files a directory input takes, by lower-case extension.
VIDEO_EXTENSIONS: Final = (".mp4", ".mov", ".mkv", ".webm")
AUDIO_EXTENSIONS: Final = (".wav", ".flac", ".mp3")

_LAYOUTS: Final = ("dir", "manifest", "fdb", "bundles")
_MANIFEST_EXTENSIONS: Final = (".jsonl", ".csv")
#: The longest file name most filesystems take (bytes): an id segment is a bundle directory.
_MAX_SEGMENT_BYTES: Final = 255


class ItemSetError(UsageError):
    """The input set cannot be run at all (missing, empty, duplicate ids): exit 2."""


@dataclass(frozen=True, slots=True)
class EvalItem:
    """One item of an eval: media paths (absolute), per-item options and pass-through columns.

    `error` is set for a row that cannot run (malformed, a missing file): that item alone
    fails, named in the summary, and the rest run.
    """

    id: str
    input_video: str | None = None
    input_audio: str | None = None
    input_image: str | None = None
    #: Per-item overrides of the run options (None: the command line's value).
    tail_silence_s: float | None = None
    #: A JSON file path, or inline segments (`[{"start_ms", "end_ms"}, ...]`).
    annotations: str | list[dict[str, Any]] | None = None
    instructions: str | None = None
    expected: str | None = None
    #: Extra manifest columns, in manifest order, kept for the summary.
    extra: dict[str, Any] = field(default_factory=dict)
    #: Full-Duplex-Bench: the task folder (`pause_handling`, ...) and the item's folder.
    fdb_task: str | None = None
    fdb_dir: str | None = None
    error: str | None = None
    #: A run bundle whose recorded input the item replays (instead of media files).
    replay: str | None = None


def load_items(source: str | os.PathLike[str], *, layout: str | None = None) -> list[EvalItem]:
    """The items of a media directory, a `.jsonl`/`.csv` manifest or a Full-Duplex-Bench tree.

    `layout`: None recognises the kind; "dir", "manifest", "fdb" or "bundles" (run bundles
    to replay: a folder of them, or an earlier eval's output directory) forces one. Raises
    `ItemSetError` when the set cannot run at all (missing, empty, duplicate ids); a row
    that cannot run becomes an item with `error` set.
    """
    if layout is not None and layout not in _LAYOUTS:
        raise ItemSetError(
            f"layout must be one of {', '.join(_LAYOUTS)}, got {layout!r}", param="layout"
        )
    shown = os.fspath(source)
    path = Path(shown)
    if not path.exists():
        # The path is user text: it must not be rewritten into a flag by `render`.
        raise ItemSetError(f"{shown}: no such file or directory", param="source", keywords=())
    lines: list[int] | None = None
    if path.is_dir():
        if layout == "manifest":
            raise ItemSetError(
                f"layout manifest needs a .jsonl or .csv file, {shown} is a directory",
                param="layout",
            )
        items = _read_directory(path, layout)
    else:
        if layout in ("dir", "fdb", "bundles"):
            raise ItemSetError(
                f"layout {layout} needs a directory, {shown} is a file", param="layout"
            )
        if path.suffix.lower() not in _MANIFEST_EXTENSIONS:
            raise ItemSetError(
                f"{shown}: not an input set (a media directory, a Full-Duplex-Bench tree, "
                "or a .jsonl or .csv manifest)",
                keywords=(),
            )
        from duplex_client.eval.manifest import read_manifest

        rows = read_manifest(path)
        lines = [line for line, _item in rows]
        items = [item for _line, item in rows]
    if not items:
        raise ItemSetError(f"{shown}: no items", keywords=())
    _check_unique(shown, items, lines)
    return items


def select_items(
    items: Sequence[EvalItem], *, limit: int | None = None, pattern: str | None = None
) -> list[EvalItem]:
    """The items whose id matches the glob `pattern` (case-sensitive), then the first `limit`."""
    if limit is not None and limit < 1:
        raise UsageError(f"limit must be positive, got {limit}", param="limit")
    chosen = list(items)
    if pattern is not None:
        chosen = [item for item in chosen if fnmatch.fnmatchcase(item.id, pattern)]
        if not chosen:
            raise ItemSetError(f"no item id matches filter {pattern!r}", param="filter")
    if not chosen:
        raise ItemSetError("no items")
    return chosen if limit is None else chosen[:limit]


def id_problem(item_id: str) -> str | None:
    """Why `item_id` cannot name a bundle directory (relative, `/`-separated), or None."""
    if not item_id.strip():
        return "id is empty"
    if "\\" in item_id:
        return f"id {item_id!r} contains a backslash"
    if any(ord(char) < 32 or ord(char) == 127 for char in item_id):
        return f"id {item_id!r} contains a control character"
    try:
        item_id.encode("utf-8")
    except UnicodeEncodeError:
        return f"id {item_id!r} is not valid UTF-8"
    if item_id.startswith("/"):
        return f"id {item_id!r} is an absolute path"
    for segment in item_id.split("/"):
        if segment in ("", ".", ".."):
            return f"id {item_id!r} has an empty, '.' or '..' path segment"
        if len(segment.encode("utf-8")) > _MAX_SEGMENT_BYTES:
            return f"id {item_id!r} has a segment longer than {_MAX_SEGMENT_BYTES} bytes"
    return None


def _read_directory(root: Path, layout: str | None) -> list[EvalItem]:
    from duplex_client.eval import bundles

    if layout == "bundles" or (layout is None and bundles.is_bundle_tree(root)):
        return bundles.read_bundle_items(root)
    if layout != "dir":
        from duplex_client.eval import fdb

        if layout == "fdb" or fdb.is_fdb_tree(root):
            return fdb.read_fdb_items(root)
    return _read_media_dir(root)


def _read_media_dir(root: Path) -> list[EvalItem]:
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


def _check_unique(shown: str, items: Sequence[EvalItem], lines: Sequence[int] | None) -> None:
    where: dict[str, list[int]] = {}
    for index, item in enumerate(items):
        where.setdefault(item.id, []).append(lines[index] if lines is not None else index)
    duplicated = {item_id: spots for item_id, spots in where.items() if len(spots) > 1}
    if not duplicated:
        return
    if lines is not None:
        named = [
            f"{item_id!r} (lines {', '.join(map(str, spots))})"
            for item_id, spots in sorted(duplicated.items())
        ]
    else:
        named = [
            f"{item_id!r} ({len(spots)} times)" for item_id, spots in sorted(duplicated.items())
        ]
    raise ItemSetError(f"{shown}: duplicate ids: {', '.join(named)}", keywords=())
