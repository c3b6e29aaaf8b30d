"""What a client connection holds, and where it is in its life (protocol.md §2, §2.5, §6.1).

`ConnectionState` is the session's state without its moves: the `State`, ids, capabilities,
seq/ack bookkeeping (§6), the attachment and resend outbox (§6.1), the response tracker (§4),
request outcomes and the cumulative input audio. `ClientConnection` adds the moves.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable
from typing import Any, Generic, cast

from duplex_client.protocol import server_events as se
from duplex_client.protocol.capabilities import Capabilities
from duplex_client.protocol.errors import DuplexClientError, DuplexSessionClosedError
from duplex_client.protocol.session.attachment import Attachment
from duplex_client.protocol.session.config import SessionConfig
from duplex_client.protocol.session.inputs import AudioEncoder, InputCounter
from duplex_client.protocol.session.outbox import Outbox
from duplex_client.protocol.session.outcomes import Outcomes
from duplex_client.protocol.session.playback import PlaybackAcks
from duplex_client.protocol.session.responses import (
    AckPolicy,
    H,
    ResponseFactory,
    ResponseState,
    ResponseTracker,
)
from duplex_client.protocol.session.sequence import EventSequence


class State(enum.Enum):
    """Where a client connection is in its life (protocol.md §2, §2.5, §6.1)."""

    #: `session.update` is out (or about to be); waiting for `session.created`.
    CONNECTING = "connecting"
    #: Attached: events flow both ways.
    OPEN = "open"
    #: The socket is gone and the session is being resumed: input queues, control waits.
    RESUMING = "resuming"
    #: `session.close` is out; waiting for `session.closed` (or the socket's end).
    CLOSING = "closing"
    #: The session ended; nothing more is sent.
    CLOSED = "closed"


class LocalProtocolError(DuplexClientError):
    """A call the connection's state does not allow (a bug in the caller, as in h11)."""

    def __init__(self, message: str, *, state: State | None = None) -> None:
        super().__init__(message)
        self.state = state


class SessionEndedError(DuplexSessionClosedError, LocalProtocolError):
    """A send after the session ended: a closed session and a wrong-state call at once."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.state = State.CLOSED


#: The states in which events are sent and received.
SENDING = frozenset({State.OPEN, State.RESUMING, State.CLOSING})


class ConnectionState(Generic[H]):
    """One session's records and lifecycle state; the moves are `ClientConnection`'s."""

    def __init__(
        self,
        *,
        model: str | None,
        config: SessionConfig | None = None,
        ack_policy: AckPolicy = "received",
        heartbeat_interval_s: float | None = 30.0,
        ack_every: int | None = None,
        max_queued_bytes: int = 64 * 1024 * 1024,
        clock: Callable[[], float] = time.monotonic,
        new_response: ResponseFactory[H] | None = None,
        encode_audio: AudioEncoder | None = None,
    ) -> None:
        """A new session's records (the options are `ClientConnection`'s)."""
        self.model = model
        self.config = config or SessionConfig()
        self.heartbeat_interval_s = heartbeat_interval_s
        #: Unsent input queued while resuming beyond which senders are asked to hold.
        self.max_queued_bytes = max_queued_bytes
        self.session_id: str | None = None
        self.session: dict[str, Any] = {}
        self.capabilities = Capabilities()
        #: Seq/ack bookkeeping; `ack_every`: ack at once after that many events (else idle).
        self.seq = EventSequence(ack_every)
        self.errors: list[se.ErrorEvent] = []
        self.closed_reason: str | None = None
        #: The socket count, attachment generation and resume token.
        self.attachment = Attachment()
        self.outbox = Outbox()
        self._decided: list[H] = []  # filled by the tracker, drained into outputs
        self.tracker: ResponseTracker[H] = ResponseTracker(
            self._decided.append,
            new_response=new_response or cast(ResponseFactory[H], ResponseState),
            sample_rate_hz=self.config.output_sample_rate_hz,
            interrupts_on_speech=self.config.interrupts_on_speech,
            clock=clock,
        )
        self._state = State.CONNECTING
        #: Outcomes of requests (acknowledgements, echoing errors) for later waiters.
        self.outcomes = Outcomes()
        self.playback = PlaybackAcks(self.tracker, ack_policy)
        self.input = InputCounter(
            self.config.input_audio_format, self.config.input_sample_rate_hz, encode_audio
        )

    # --- state ---

    @property
    def state(self) -> State:
        """Where the session is in its life."""
        return self._state

    @property
    def is_open(self) -> bool:
        """Whether the session is usable for sending (also while it is being resumed)."""
        return self._state in SENDING

    @property
    def ended(self) -> bool:
        """Whether the session ended (CLOSED)."""
        return self._state is State.CLOSED

    @property
    def writable(self) -> bool:
        """Whether frames go straight to the socket (False while resuming)."""
        return self._state in (State.OPEN, State.CLOSING)

    @property
    def resumable(self) -> bool:
        """Whether a drop is answered by resuming (enabled, and an id and token are held)."""
        return self.attachment.resumable(self.session_id)

    def acks_expire(self) -> bool:
        """Whether an ack for a response finished before a later commit is refused (§5)."""
        policy = self.session.get("playback_commit_policy") or self.config.playback_commit_policy
        return policy == "ack_only"

    def _check(self, action: str, *allowed: State) -> None:
        """Raise for a call made in the wrong state (`SessionEndedError` once CLOSED)."""
        if self._state in allowed:
            return
        if self._state is State.CLOSED:
            raise SessionEndedError(self.closed_reason or "closed")
        needs = " or ".join(s.name for s in allowed)
        raise LocalProtocolError(
            f"cannot {action} in state {self._state.name} (needs {needs})", state=self._state
        )
