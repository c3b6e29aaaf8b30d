"""Accepted input events: the idempotency cache of their ids and the bounded append rows."""

from __future__ import annotations

from collections import OrderedDict, deque
from typing import Any

from duplex_client.server.assembler import Unit
from duplex_client.server.inputs import ParsedAppend


class InputLedger:
    """Which append/commit ids were accepted, the latest one, and a row per accepted append."""

    def __init__(self, id_cache: int, max_rows: int) -> None:
        self._id_cache = id_cache
        self._seen: OrderedDict[str, None] = OrderedDict()
        self._last_event_id: str | None = None
        #: The latest accepted appends (tests, debugging); bounded. Kept as flat tuples of
        #: strings and numbers, which the garbage collector stops tracking, and shaped as §10
        #: rows when read: 20 000 rows of dicts a session were most of what a busy server's
        #: full collections walked.
        self._rows: deque[_Row] = deque(maxlen=max_rows)
        self._append_count = 0

    @property
    def last_event_id(self) -> str | None:
        """The id of the latest accepted append or commit (None before the first)."""
        return self._last_event_id

    @property
    def append_count(self) -> int:
        """How many appends were accepted (rows may have been dropped; the count is not)."""
        return self._append_count

    @property
    def appends(self) -> tuple[dict[str, Any], ...]:
        """The latest accepted appends' rows, oldest first."""
        return tuple(_shaped(row) for row in self._rows)

    def is_repeat(self, event_id: str | None) -> bool:
        """Whether this append/commit id was already accepted (an idempotent resend)."""
        return event_id is not None and event_id in self._seen

    def remember(self, event_id: str | None) -> None:
        """Add an accepted append/commit id to the completed-id cache."""
        if event_id is None:
            return
        self._seen[event_id] = None
        while len(self._seen) > self._id_cache:
            self._seen.popitem(last=False)
        self._last_event_id = event_id

    def record_append(
        self,
        event_id: str | None,
        units: list[Unit],
        parsed: ParsedAppend,
        *,
        duration_ms: int,
        audio_end_ms: int,
    ) -> None:
        """Keep the §10-shaped row of an accepted append."""
        self._append_count += 1
        last = units[-1] if units else None
        shas = parsed.frames.sha256 if parsed.frames else ()
        self._rows.append(
            (
                self._append_count - 1,
                event_id,
                last.kind.value if last else None,
                last.unit_index if last else None,
                last.audio_unit_index if last else None,
                duration_ms,
                audio_end_ms,
                parsed.is_speech,
                shas,
                parsed.frame_bytes,
            )
        )


#: index, event id, unit kind, unit index, audio unit index, duration, audio end, is_speech,
#: the frames' digests and their sizes.
_Row = tuple[
    int, str | None, str | None, int | None, int | None, int, int, bool | None,
    tuple[str, ...], tuple[int, ...],
]  # fmt: skip


def _shaped(row: _Row) -> dict[str, Any]:
    """One accepted append as its §10-shaped row."""
    index, event_id, kind, unit_index, audio_unit_index, duration, end, speech, shas, sizes = row
    return {
        "index": index,
        "event_id": event_id,
        "unit_kind": kind,
        "unit_index": unit_index,
        "audio_unit_index": audio_unit_index,
        "duration_ms": duration,
        "audio_end_ms": end,
        "is_speech": speech,
        "frames": [{"sha256": h, "bytes": b} for h, b in zip(shas, sizes, strict=True)],
    }
