"""Stamps, names, journals and encodes a session's outgoing events, in order."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from duplex_client.protocol.codec import dumps, new_server_event_id
from duplex_client.protocol.duplex_events import HandshakeError
from duplex_client.protocol.server_events import ErrorEvent, ServerEvent, SessionResyncRequired
from duplex_client.server.errors import ENVELOPE_ERROR_CODES
from duplex_client.server.journal import Journal

#: Events scoped to one attachment: never journaled, never sequenced (protocol.md §6).
ATTACHMENT_SCOPED: Final = frozenset(
    {
        "session.created",
        "session.resumed",
        "session.replaced",
        "session.heartbeat_ack",
        "session.resync_required",
    }
)


@dataclass(frozen=True, slots=True)
class Send:
    """Send one encoded event (a text frame)."""

    type: str
    data: bytes
    seq: int | None = None
    code: str | None = None


@dataclass(frozen=True, slots=True)
class CloseSocket:
    """Close the attachment's socket after everything before it was sent."""

    code: int
    reason: str


Output = Send | CloseSocket


def is_journaled(event: ServerEvent) -> bool:
    """Whether an event takes a `server_event_seq`."""
    if event.TYPE in ATTACHMENT_SCOPED:
        return False
    if isinstance(event, ErrorEvent):
        return event.error.code not in ENVELOPE_ERROR_CODES
    return True


class Emitter:
    """Collects one session's outputs between two calls of its state machine."""

    def __init__(
        self, *, beta_names: bool, journal: Journal | None, session_id: str | None = None
    ) -> None:
        self.beta_names = beta_names
        self.journal = journal
        self.session_id = session_id
        self._out: list[Output] = []

    def build(
        self, event: ServerEvent, seq: int | None = None, *, beta: bool | None = None
    ) -> Send:
        """Encode one event (type first, then `event_id`, then the seq) without queueing it.

        `beta` picks the name generation (default: the session's).
        """
        beta = self.beta_names if beta is None else beta
        data = dumps(event.stamped(new_server_event_id(), seq, beta=beta))
        code = event.error.code if isinstance(event, ErrorEvent) else None
        if isinstance(event, HandshakeError):
            code = event.code
        return Send(event.wire_type(beta), data, seq, code)

    def emit(self, event: ServerEvent, now: float, *, beta: bool | None = None) -> None:
        """Queue one event, journaled and sequenced unless attachment-scoped."""
        journal = self.journal
        if journal is None or not is_journaled(event):
            self._out.append(self.build(event, beta=beta))
            return
        send = self.build(event, journal.next_seq, beta=beta)
        if not journal.fits(len(send.data)):
            self.journal = None
            resync = SessionResyncRequired(session_id=self.session_id, reason="journal_overflow")
            self._out.append(self.build(resync))
            self._out.append(self.build(event, beta=beta))
            return
        journal.record(send.data, now)
        self._out.append(send)

    def raw(self, send: Send) -> None:
        """Queue an already encoded event (a replay)."""
        self._out.append(send)

    def close(self, code: int, reason: str) -> None:
        """Queue a socket close."""
        self._out.append(CloseSocket(code, reason))

    def drain(self) -> list[Output]:
        """Everything queued since the last drain, in order."""
        out, self._out = self._out, []
        return out
