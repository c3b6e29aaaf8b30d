"""What the sans-I/O `ClientConnection` hands its shell: effects, in order.

Every connection method that can change the state returns an `Output`: an ordered tuple of
effects. The shell performs them in order: `Deliver` goes to listeners and subscribers,
`Send` is written (or queued) on the socket, the `Schedule*` ones start timers that call the
connection back, `Reconnect` and `Resend` drive a resume, and `Closed` ends the session.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeVar

from duplex_client.protocol.codec import dumps
from duplex_client.protocol.server_events import ServerEvent
from duplex_client.protocol.session.outbox import OutboxEntry
from duplex_client.protocol.session.responses import ResponseState

#: Events that are pointless after a reconnect (a new ack or heartbeat follows anyway).
DROPPABLE = frozenset({"session.event_ack", "session.heartbeat"})


@dataclass(frozen=True, slots=True)
class Deliver:
    """Hand a server event to the listeners and subscribers."""

    event: ServerEvent


@dataclass(frozen=True, slots=True)
class Decided:
    """A response's decision is known: queue its handle for `responses()`."""

    handle: ResponseState


@dataclass(frozen=True, slots=True)
class Settled:
    """The outcome of a request (its acknowledgement or the error echoing it) arrived."""

    event_id: str
    outcome: ServerEvent


@dataclass(frozen=True, slots=True)
class Send:
    """Write one encoded client event.

    With `entry` it is input kept in the outbox: written now when `ClientConnection.must_write`
    still says so, else already queued for the resume. `droppable` frames (acks, heartbeats)
    are skipped while disconnected; `hold` asks the sender to wait for the resume first (too
    much input is queued). `counted` is an append's cumulative samples before and after it.
    """

    data: bytes
    event_id: str | None
    entry: OutboxEntry | None = None
    droppable: bool = False
    hold: bool = False
    counted: tuple[int, int] | None = None

    @classmethod
    def encode(
        cls,
        payload: dict[str, Any],
        data: bytes | None = None,
        entry: OutboxEntry | None = None,
        *,
        hold: bool = False,
    ) -> Send:
        """A frame for an event object (`data`: already encoded); acks and heartbeats drop."""
        etype, event_id = payload.get("type"), payload.get("event_id")
        eid = event_id if isinstance(event_id, str) else None
        frame = entry.data if entry is not None else data or dumps(payload)
        droppable = entry is None and etype in DROPPABLE
        return cls(frame, eid, entry=entry, droppable=droppable, hold=hold)

    def with_counted(self, counted: tuple[int, int] | None) -> Send:
        """This frame with an append's counted samples (as `dataclasses.replace`, cheaper)."""
        return Send(self.data, self.event_id, self.entry, self.droppable, self.hold, counted)


@dataclass(frozen=True, slots=True)
class ScheduleAck:
    """An event ack is due: call `ClientConnection.ack()` once the buffered events are in."""


@dataclass(frozen=True, slots=True)
class SchedulePlaybackAcks:
    """Finished responses count as played: call `ClientConnection.playback_acks()` soon."""


@dataclass(frozen=True, slots=True)
class ScheduleHeartbeat:
    """Call `ClientConnection.heartbeat()` after `delay_s` seconds."""

    delay_s: float


@dataclass(frozen=True, slots=True)
class Reconnect:
    """The socket dropped in a resumable session: reconnect and send `resume_request()`."""

    cause: str


@dataclass(frozen=True, slots=True)
class Resend:
    """Resumed: write every `next_resend()` entry, then call `flushed()` (§6.1).

    `unresolved`: input written before the drop that could not be placed against the
    server's view, and so is not sent again.
    """

    unresolved: int


@dataclass(frozen=True, slots=True)
class Resynced:
    """`session.resync_required`: resume guarantees are gone (token and outbox forgotten)."""

    reason: str | None


@dataclass(frozen=True, slots=True)
class Closed:
    """The session ended: stop reading, fail the waiters, end the queues."""

    reason: str


Effect = (
    Deliver
    | Decided
    | Settled
    | Send
    | ScheduleAck
    | SchedulePlaybackAcks
    | ScheduleHeartbeat
    | Reconnect
    | Resend
    | Resynced
    | Closed
)

E = TypeVar("E", bound=Effect)


@dataclass(frozen=True, slots=True)
class Output:
    """The effects of one connection call, in the order they must be performed."""

    effects: tuple[Effect, ...] = ()

    def __add__(self, other: Output) -> Output:
        """This output's effects, then `other`'s."""
        return Output(self.effects + other.effects)

    def __bool__(self) -> bool:
        """Whether there is anything to do."""
        return bool(self.effects)

    @property
    def events(self) -> list[ServerEvent]:
        """The server events to deliver."""
        return [e.event for e in self.effects if isinstance(e, Deliver)]

    def of(self, kind: type[E]) -> list[E]:
        """The effects of one kind, in order."""
        return [e for e in self.effects if isinstance(e, kind)]
