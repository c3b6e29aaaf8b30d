"""The resend outbox: appends and commits the server may not have received (protocol.md §6.1).

Sans-I/O. An acknowledged commit confirms itself and everything sent before it, and so does
a server decision on a unit (our server's `metadata.unit_index`, protocol.md §3.1) for the
append that closed that unit, unless a server commit has since moved the grid under it; on
resume, `pending_after(input.last_event_id)` drops what the server already has, and the rest
is sent again with the original ids, in the original order.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from duplex_client.protocol.client_events import InputAudioBufferAppend
from duplex_client.protocol.response_events import ResponseEvent
from duplex_client.protocol.server_events import (
    ErrorEvent,
    InputAudioBufferCommitted,
    ServerEvent,
    SessionResyncRequired,
)

InputKind = Literal["append", "commit"]

#: Input events kept for resending after a resume (protocol.md §6.1).
INPUT_KINDS: dict[str, InputKind] = {
    "input_audio_buffer.append": "append",
    "input_audio_buffer.commit": "commit",
}


@dataclass(slots=True)
class OutboxEntry:
    """One append or commit as encoded; `wire` is the connection it was last written on."""

    n: int
    event_id: str
    kind: InputKind
    data: bytes
    wire: int | None = None
    #: The `unit_index` of the unit this append closes, if any.
    unit: int | None = None
    #: The append's cumulative `audio_end_ms` (None for commits).
    audio_end_ms: int | None = None
    #: Where the append's audio starts (`audio_end_ms - duration_ms`; None for commits).
    audio_start_ms: int | None = None

    @property
    def written(self) -> bool:
        """Whether it was written to some socket already (a resend, if sent again)."""
        return self.wire is not None


class Outbox:
    """Appends and commits not yet known to be accepted, in send order (sans-I/O).

    An acknowledged commit confirms itself and everything before it, a decision on unit k
    the append that closed unit k and everything before it; on resume,
    `pending_after(input.last_event_id)` says what the server lacks. Entries written to a
    socket are forgotten oldest first beyond the bounds; unsent ones never are.
    """

    def __init__(self, *, max_entries: int = 512, max_bytes: int = 8 * 1024 * 1024) -> None:
        # Only what was still in flight when a socket died can be missing on the server, and
        # that is bounded by the socket buffers on both ends (a few MiB), so 8 MiB of written
        # entries covers a drop while keeping a never-committing duplex stream's memory small.
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._entries: deque[OutboxEntry] = deque()
        self._next = 0
        self._bytes = 0
        self._horizon: str | None = None
        self._forgot_any = False
        self._decided_unit = -1
        self._cursor = 0  # serial of the next entry to write after a resume
        #: Told the id of every entry the server confirmed (the shell's record of inputs).
        self.on_confirmed: Callable[[str], None] | None = None

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def unsent_bytes(self) -> int:
        """Bytes of entries never written to any socket."""
        return sum(len(e.data) for e in self._entries if e.wire is None)

    def add(
        self,
        event_id: str,
        kind: InputKind,
        data: bytes,
        *,
        unit: int | None = None,
        audio_end_ms: int | None = None,
        trim: bool = True,
    ) -> OutboxEntry:
        """Record an input event about to be sent (or queued); `unit` is the unit it closes."""
        # A compact copy: the encoder's buffer can be much larger than its content.
        data = memoryview(data).tobytes()
        entry = OutboxEntry(self._next, event_id, kind, data, unit=unit, audio_end_ms=audio_end_ms)
        self._next += 1
        self._entries.append(entry)
        self._bytes += len(data)
        if trim:
            while (len(self._entries) > self.max_entries or self._bytes > self.max_bytes) and (
                self._entries[0].wire is not None and len(self._entries) > 1
            ):
                self._pop_front()
        return entry

    def _pop_front(self) -> None:
        entry = self._entries.popleft()
        self._bytes -= len(entry.data)
        self._horizon = entry.event_id
        self._forgot_any = True

    def entry_from(self, n: int) -> OutboxEntry | None:
        """The oldest held entry with a serial of at least `n` (entries may be added meanwhile)."""
        for entry in self._entries:
            if entry.n >= n:
                return entry
        return None

    def keep(
        self, payload: dict[str, Any], data: bytes, *, trim: bool = True
    ) -> OutboxEntry | None:
        """Record an append or commit with an id about to be sent (None for anything else)."""
        etype, event_id = payload.get("type"), payload.get("event_id")
        kind = INPUT_KINDS.get(etype) if isinstance(etype, str) else None
        if kind is None or not isinstance(event_id, str):
            return None
        unit, end = payload.get("unit_index"), payload.get("audio_end_ms")
        duration = payload.get("duration_ms")
        entry = self.add(
            event_id,
            kind,
            data,
            unit=unit if isinstance(unit, int) else None,
            audio_end_ms=end if isinstance(end, int) else None,
            trim=trim,
        )
        if isinstance(end, int) and isinstance(duration, int):
            entry.audio_start_ms = end - duration
        return entry

    def add_append(
        self, event: InputAudioBufferAppend, data: bytes, *, trim: bool = True
    ) -> OutboxEntry:
        """`keep` for an append event encoded as `data`, read from its fields (same entry)."""
        unit, end, duration = event.unit_index, event.audio_end_ms, event.duration_ms
        entry = self.add(
            event.event_id,
            "append",
            data,
            unit=unit if isinstance(unit, int) else None,
            audio_end_ms=end if isinstance(end, int) else None,
            trim=trim,
        )
        if isinstance(end, int) and isinstance(duration, int):
            entry.audio_start_ms = end - duration
        return entry

    def mark_written(self, entry: OutboxEntry, connection: int) -> None:
        """`entry` was written on socket number `connection`."""
        entry.wire = connection
        self._cursor = max(self._cursor, entry.n + 1)

    def place(self, view: dict[str, Any] | None) -> int:
        """After a resume: drop what the server's `input` view says it has, rewind for resending.

        Returns how many written entries could not be placed (forgotten: without a view, or
        with an id not found, duplicates could not be ruled out).
        """
        last = view.get("last_event_id") if isinstance(view, dict) else None
        placed = (
            isinstance(view, dict)
            and (last is None or isinstance(last, str))
            and self.pending_after(last)
        )
        self._cursor = 0
        return 0 if placed else self.drop_written()

    def next_resend(self) -> OutboxEntry | None:
        """The next entry to write after `place` (entries queued meanwhile included)."""
        return self.entry_from(self._cursor)

    def drop_written(self) -> int:
        """Forget every entry already written to a socket; returns how many."""
        kept = deque(e for e in self._entries if e.wire is None)
        dropped = len(self._entries) - len(kept)
        if dropped:
            self._entries = kept
            self._bytes = sum(len(e.data) for e in kept)
            self._forgot_any = True
        return dropped

    def confirm(self, event_id: str) -> bool:
        """The server accepted `event_id` (an acknowledged commit) and all before it."""
        if not any(e.event_id == event_id for e in self._entries):
            return False
        while self._entries:
            entry_id = self._entries[0].event_id
            self._pop_front()
            if self.on_confirmed is not None:
                self.on_confirmed(entry_id)
            if entry_id == event_id:
                break
        return True

    def confirm_unit(self, unit_index: int) -> bool:
        """The server decided on unit `unit_index`, so it has the append that closed it."""
        if unit_index <= self._decided_unit:
            return False
        self._decided_unit = unit_index
        for entry in self._entries:
            if entry.unit == unit_index and entry.wire is not None:
                return self.confirm(entry.event_id)
            if entry.unit is not None and entry.unit > unit_index:
                break
        return False

    def observe(self, event: ServerEvent) -> None:
        """Apply what a server event says about our input: accepted, refused, or regridded."""
        if isinstance(event, ErrorEvent) and event.error.event_id:
            self.discard(event.error.event_id)
        elif isinstance(event, InputAudioBufferCommitted) and event.client_event_id:
            self.confirm(event.client_event_id)
        elif isinstance(event, InputAudioBufferCommitted) and event.audio_end_ms is not None:
            self.server_committed(event.audio_end_ms)
        elif isinstance(event, SessionResyncRequired):
            self.clear()  # no resume guarantees any more
        elif isinstance(event, ResponseEvent) and (unit := event.unit_index) is not None:
            self.confirm_unit(unit)

    def server_committed(self, audio_end_ms: int) -> None:
        """The server sealed a turn at `audio_end_ms` by itself (server VAD, protocol.md §6.1).

        It restarted its unit grid there. Appends past that point were numbered on the old
        grid by a client that had not heard of the commit yet, so their unit numbers no
        longer name the server's units: a decision on unit k must not release them.
        """
        for entry in self._entries:
            if entry.audio_end_ms is not None and entry.audio_end_ms > audio_end_ms:
                entry.unit = None

    def discard(self, event_id: str) -> None:
        """Forget an event the server rejected (resending it would only repeat the error)."""
        for entry in self._entries:
            if entry.event_id == event_id:
                self._entries.remove(entry)
                self._bytes -= len(entry.data)
                return

    def pending_after(self, last_event_id: str | None) -> bool:
        """Drop what the server already has; False when its view cannot be placed in ours."""
        if last_event_id is None:
            return not self._forgot_any
        if last_event_id == self._horizon:
            return True
        if any(e.event_id == last_event_id for e in self._entries):
            self.confirm(last_event_id)
            return True
        return False

    def new_session(self) -> tuple[int, int | None]:
        """A new session replaces a lost one: forget what the lost one was sent.

        Returns how many entries are lost, and where the first input still to be written
        starts (`audio_start_ms`; None when nothing waits). What waits goes to the new
        session, whose units no longer carry the old numbering.
        """
        lost = self.drop_written()
        for entry in self._entries:
            entry.unit = None
        self._forgot_any = False
        self._horizon = None
        self._decided_unit = -1
        self._cursor = 0
        starts = [e.audio_start_ms for e in self._entries if e.audio_start_ms is not None]
        return lost, (starts[0] if starts else None)

    def clear(self) -> None:
        """Forget everything (the session can no longer be resumed)."""
        self._entries.clear()
        self._bytes = 0
        self._forgot_any = True
        self._horizon = None
        self._decided_unit = -1
