"""What a stream sent, and where a follow-up stream continues."""

from __future__ import annotations

from dataclasses import dataclass

from duplex_client.framing.clock import MediaClock
from duplex_client.framing.plan import FramingReport, StreamPosition


@dataclass(frozen=True, slots=True)
class StreamResult:
    """What a stream sent, and where a follow-up stream continues (pass `position`, `clock`)."""

    position: StreamPosition
    clock: MediaClock
    report: FramingReport
    append_event_ids: tuple[str, ...]
    commit_event_id: str | None
    media_end_ms: int
    #: When the final commit was sent (the clock's `now()`; None without one).
    commit_sent_at: float | None = None

    @property
    def appends(self) -> int:
        """Number of appends sent."""
        return len(self.append_event_ids)
