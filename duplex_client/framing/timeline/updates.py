"""Changes to sent rows after the fact: resends, later sends, acknowledgements and errors."""

from __future__ import annotations

from typing import Any

from duplex_client.framing.clock import MediaClock
from duplex_client.framing.stats import SortedSample
from duplex_client.framing.timeline.rows import acknowledgement, resend_record
from duplex_client.protocol.server_events import (
    ErrorEvent,
    InputAudioBufferCommitted,
    ServerEvent,
)


class RowUpdates:
    """What `InputTimeline` does to rows already recorded, found by their `event_id`.

    A mixin: the timeline owns the state named here (rows by event id, the running lateness,
    the media clock and the clients listened to).
    """

    _rows: dict[str, dict[str, Any]]
    _listening: set[int]
    lateness: SortedSample
    clock: MediaClock | None

    def _offset_now(self) -> float | None:
        if self.clock is None or not self.clock.started:
            return None
        return self.clock.offset_ms()

    def add_resend(self, event_id: str, sent_offset_ms: float, attempt: int) -> bool:
        """Note a resend of an append after a resume; False if the id is unknown."""
        row = self._rows.get(event_id)
        if row is None or "resends" not in row:
            return False
        row["resends"].append(resend_record(sent_offset_ms, attempt))
        return True

    def set_sent_offset(self, event_id: str, sent_offset_ms: float) -> bool:
        """A row's event went out later than first recorded (held over a reconnect).

        Its `sent_offset_ms` becomes the new time and an append's `lateness_ms` follows;
        False if no row has that id.
        """
        row = self._rows.get(event_id)
        if row is None:
            return False
        row["sent_offset_ms"] = sent_offset_ms
        scheduled = row.get("scheduled_offset_ms")
        if "lateness_ms" in row and scheduled is not None:
            late = round(max(0.0, sent_offset_ms - scheduled), 3)
            self.lateness.replace(row["lateness_ms"], late)
            row["lateness_ms"] = late
        return True

    def acknowledge(
        self,
        client_event_id: str | None,
        *,
        received_offset_ms: float | None,
        audio_end_ms: int | None,
        no_response: bool = False,
    ) -> bool:
        """Fill a commit row's acknowledgement; False if no commit row has that id."""
        row = self._rows.get(client_event_id or "")
        if row is None or "acknowledged" not in row:
            return False
        row["acknowledged"] = acknowledgement(
            received_offset_ms=received_offset_ms,
            audio_end_ms=audio_end_ms,
            no_response=no_response,
        )
        return True

    def record_error(self, event_id: str | None, code: str | None) -> bool:
        """Fill `error_code` on the append or commit row with that `event_id`."""
        row = self._rows.get(event_id or "")
        if row is None:
            return False
        row["error_code"] = code
        return True

    def observe(self, event: ServerEvent, received_offset_ms: float | None = None) -> bool:
        """Apply a server event to the rows (commit acknowledgements, echoed errors)."""
        when = self._offset_now() if received_offset_ms is None else received_offset_ms
        if isinstance(event, InputAudioBufferCommitted):
            return self.acknowledge(
                event.client_event_id,
                received_offset_ms=when,
                audio_end_ms=event.audio_end_ms,
                no_response=event.no_response,
            )
        if isinstance(event, ErrorEvent):
            return self.record_error(event.error.event_id, event.code)
        return False

    def on_event(self, event: ServerEvent, received_at: float) -> None:
        """An event listener: `received_at` is a reading of the media clock's time source."""
        offset = (
            None
            if self.clock is None or not self.clock.started
            else self.clock.offset_ms(received_at)
        )
        self.observe(event, offset)

    def listen_to(self, client: Any) -> None:
        """Register `on_event` with a client's `add_listener` once per client."""
        if id(client) not in self._listening:
            self._listening.add(id(client))
            client.add_listener(self.on_event)
