"""One item of an eval: the media it runs, its options and columns, or why it cannot run.

The input-set readers (a media directory, a manifest, a Full-Duplex-Bench tree, run bundles)
each build these; `items.load_items` chooses the reader.
"""

from __future__ import annotations

from dataclasses import dataclass, field
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

#: Summary columns a benchmark layout's reader adds to its items (not manifest columns).
LAYOUT_COLUMN_PREFIXES: Final = ("fdb_", "omniinteract_", "omni_duplexeval_")

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


def is_layout_column(name: str) -> bool:
    """Whether `name` is a column a benchmark layout's reader added (`LAYOUT_COLUMN_PREFIXES`)."""
    return name.startswith(LAYOUT_COLUMN_PREFIXES)


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
