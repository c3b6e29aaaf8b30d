"""Stamps, names, journals and encodes a session's outgoing events, in order."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from duplex_client.protocol.codec import dumps, new_server_event_id
from duplex_client.protocol.server_events import GA_TO_BETA
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


def is_journaled(event: dict[str, Any]) -> bool:
    """Whether an event of this shape takes a `server_event_seq`."""
    etype = event.get("type")
    if etype in ATTACHMENT_SCOPED:
        return False
    if etype == "error":
        body = event.get("error")
        return not (isinstance(body, dict) and body.get("code") in ENVELOPE_ERROR_CODES)
    return True


class Emitter:
    """Collects one session's outputs between two calls of its state machine."""

    def __init__(self, *, beta_names: bool, journal: Journal | None) -> None:
        self.beta_names = beta_names
        self.journal = journal
        self._out: list[Output] = []

    def build(self, event: dict[str, Any], seq: int | None = None) -> Send:
        """Encode one event (type first, then `event_id`, then the seq) without queueing it."""
        etype = str(event["type"])
        if self.beta_names:
            etype = GA_TO_BETA.get(etype, etype)
        head: dict[str, Any] = {"type": etype, "event_id": new_server_event_id()}
        if seq is not None:
            head["server_event_seq"] = seq
        head.update((k, v) for k, v in event.items() if k != "type")
        body = event.get("error")
        code = body.get("code") if etype == "error" and isinstance(body, dict) else None
        return Send(etype, dumps(head), seq, code if isinstance(code, str) else None)

    def emit(self, event: dict[str, Any], now: float) -> None:
        """Queue one event, journaled and sequenced unless attachment-scoped."""
        journal = self.journal
        if journal is None or not is_journaled(event):
            self._out.append(self.build(event))
            return
        send = self.build(event, journal.next_seq)
        if not journal.fits(len(send.data)):
            self.journal = None
            self._out.append(
                self.build({"type": "session.resync_required", "reason": "journal_overflow"})
            )
            self._out.append(self.build(event))
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
