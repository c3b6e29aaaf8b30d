"""What the event handlers, intake and turn lane see of a session (no import of it)."""

from __future__ import annotations

from typing import Protocol

from duplex_client.protocol.capabilities import Capabilities
from duplex_client.protocol.server_events import ServerEvent
from duplex_client.server.continuous import ContinuousStream
from duplex_client.server.conversation import Conversation
from duplex_client.server.engine.base import Engine
from duplex_client.server.errors import Reject
from duplex_client.server.faults import Faults
from duplex_client.server.input_buffer import InputBuffer
from duplex_client.server.journal import Journal
from duplex_client.server.ledger import InputLedger
from duplex_client.server.limits import Limits
from duplex_client.server.pipeline import Decisions, Pipeline
from duplex_client.server.profiles import Profile
from duplex_client.server.retained import RetainedTurns
from duplex_client.server.settings import SessionSettings
from duplex_client.server.turn_state import TurnTracker


class SessionPort(Protocol):
    """A session's parts and the few actions that span them."""

    @property
    def session_id(self) -> str:
        """The session id."""

    @property
    def profile(self) -> Profile:
        """The model profile."""

    @property
    def caps(self) -> Capabilities:
        """The advertised capabilities."""

    @property
    def limits(self) -> Limits:
        """The server limits."""

    @property
    def faults(self) -> Faults:
        """The injected faults."""

    @property
    def engine(self) -> Engine:
        """The model engine."""

    @property
    def settings(self) -> SessionSettings:
        """The current session settings."""

    @property
    def epoch(self) -> int:
        """The interruption epoch."""

    @property
    def journal(self) -> Journal | None:
        """The replay journal, if any."""

    @property
    def inputs(self) -> InputBuffer:
        """Accepted input not yet in a turn."""

    @property
    def ledger(self) -> InputLedger:
        """Accepted input event ids and append rows."""

    @property
    def retained(self) -> RetainedTurns:
        """Committed turns waiting for a response."""

    @property
    def pipeline(self) -> Pipeline:
        """The model's serial input pipeline."""

    @property
    def decisions(self) -> Decisions:
        """The engine's numbered decisions."""

    @property
    def conversation(self) -> Conversation:
        """Responses and history."""

    @property
    def turn(self) -> TurnTracker:
        """The turn state `turn.event` reports."""

    @property
    def stream(self) -> ContinuousStream:
        """A continuous stream's one response and its drain at `session.close`."""

    def emit(self, event: ServerEvent, now: float) -> None:
        """Send a server event."""

    def advance_epoch(self) -> int:
        """Start a new interruption epoch; the new value."""

    def update_settings(self, settings: SessionSettings, now: float) -> None:
        """Adopt accepted settings and announce them (`session.updated`)."""

    def reject(self, rej: Reject, cid: str | None, now: float) -> None:
        """Emit the error for a refused event; fatal codes end the session."""

    def interrupt(self, reason: str, now: float) -> None:
        """Stop the active response (the output buffer is cleared)."""

    def finish(self, reason: str, now: float, *, close_code: int | None = 1000) -> None:
        """End the session with `session.closed`."""
