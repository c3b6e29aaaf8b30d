"""The sans-I/O session state machine: client events in, server events out, time injected."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any, Final

from duplex_client.protocol.capabilities import Capabilities
from duplex_client.protocol.client_events import decode_client_event
from duplex_client.protocol.errors import ErrorCode
from duplex_client.protocol.fields import SchemaError
from duplex_client.protocol.server_events import ServerEvent, SessionUpdated
from duplex_client.server import playback
from duplex_client.server.continuous import ContinuousStream
from duplex_client.server.conversation import Conversation
from duplex_client.server.emitter import Emitter, Output
from duplex_client.server.engine.base import Engine
from duplex_client.server.errors import Reject, client_event_id
from duplex_client.server.faults import Faults
from duplex_client.server.handlers import HANDLERS
from duplex_client.server.input_buffer import InputBuffer
from duplex_client.server.journal import Journal
from duplex_client.server.ledger import InputLedger
from duplex_client.server.lifecycle import Lifecycle, SessionState
from duplex_client.server.limits import Limits
from duplex_client.server.live_state import live_state
from duplex_client.server.pipeline import Decisions, Pipeline
from duplex_client.server.profiles import Profile
from duplex_client.server.retained import RetainedTurns
from duplex_client.server.session import attach, responses, timers
from duplex_client.server.session import endings as _endings
from duplex_client.server.session_object import build_session_object
from duplex_client.server.settings import SessionSettings
from duplex_client.server.turn_state import TurnTracker

log = logging.getLogger("duplex_client.server")

#: Rows of accepted appends a session keeps (about an hour of 200 ms appends), oldest dropped.
MAX_APPEND_ROWS: Final = 20_000


class DuplexSession:
    """One session: validation, unit assembly, the model pipeline, responses, journal, timers."""

    def __init__(
        self,
        *,
        session_id: str,
        profile: Profile,
        settings: SessionSettings,
        engine: Engine,
        limits: Limits,
        faults: Faults,
        beta_names: bool,
        resumable: bool,
        now: float,
    ) -> None:
        self._session_id = session_id
        self._profile = profile
        self._settings = settings
        self._engine = engine
        self._limits = limits
        self._faults = faults
        self._caps: Capabilities = profile.capabilities(limits, resumable=resumable)
        self._resumable = resumable
        journal = Journal(limits.journal_bytes, limits.journal_retention_s) if resumable else None
        self._emitter = Emitter(beta_names=beta_names, journal=journal, session_id=session_id)
        self._epoch = 0
        #: State, activity clock, resume credentials (the registry reads them here).
        self.life = Lifecycle(resumable=resumable, now=now)
        self._inputs = InputBuffer(profile, settings, limits.max_pending_input_bytes)
        self._ledger = InputLedger(limits.completed_id_cache, MAX_APPEND_ROWS)
        self._retained = RetainedTurns()
        self._conversation = Conversation(self)
        self._pipeline = Pipeline(now, self._job_started)
        self._stream = ContinuousStream(profile)
        self._decisions = Decisions(engine)
        self._turn = TurnTracker()
        self.on_closed: Callable[[DuplexSession], None] | None = None
        #: Called with the job of each pending decision; the I/O shell ticks when it is done.
        self.on_pending: Callable[[Future[Any]], None] | None = None

    def _job_started(self, job: Future[Any]) -> None:
        if self.on_pending is not None:
            self.on_pending(job)

    # --- the parts and read-only configuration (what `SessionPort` exposes) ---

    @property
    def session_id(self) -> str:
        """The session id."""
        return self._session_id

    @property
    def profile(self) -> Profile:
        """The model profile."""
        return self._profile

    @property
    def caps(self) -> Capabilities:
        """The advertised capabilities."""
        return self._caps

    @property
    def limits(self) -> Limits:
        """The server limits."""
        return self._limits

    @property
    def faults(self) -> Faults:
        """The injected faults."""
        return self._faults

    @property
    def engine(self) -> Engine:
        """The model engine."""
        return self._engine

    @property
    def settings(self) -> SessionSettings:
        """The current session settings."""
        return self._settings

    @property
    def emitter(self) -> Emitter:
        """Where server events go (sequenced, journaled, drained by the shell)."""
        return self._emitter

    @property
    def epoch(self) -> int:
        """The interruption epoch."""
        return self._epoch

    @property
    def inputs(self) -> InputBuffer:
        """Accepted input not yet sealed into a turn."""
        return self._inputs

    @property
    def ledger(self) -> InputLedger:
        """Accepted input event ids and append rows."""
        return self._ledger

    @property
    def retained(self) -> RetainedTurns:
        """Committed turns waiting for a response."""
        return self._retained

    @property
    def pipeline(self) -> Pipeline:
        """The model's serial input pipeline."""
        return self._pipeline

    @property
    def decisions(self) -> Decisions:
        """The engine's numbered decisions."""
        return self._decisions

    @property
    def stream(self) -> ContinuousStream:
        """A continuous stream's one response and its drain at `session.close` (§9.2)."""
        return self._stream

    @property
    def conversation(self) -> Conversation:
        """Responses and history."""
        return self._conversation

    @property
    def turn(self) -> TurnTracker:
        """The turn state `turn.event` reports."""
        return self._turn

    # --- lifecycle, as the registry and the shell see it ---

    @property
    def state(self) -> SessionState:
        """Open, detached (awaiting a resume) or closed."""
        return self.life.state

    @property
    def closed(self) -> bool:
        """Whether the session has ended (closed or expired)."""
        return self.life.state is SessionState.CLOSED

    @property
    def journal(self) -> Journal | None:
        """The replay journal (None when not resumable or after an overflow)."""
        return self._emitter.journal

    @property
    def can_resume(self) -> bool:
        """Whether a `session.resume` may attach to this session now."""
        return self._resumable and self.journal is not None and not self.closed

    def session_object(self) -> dict[str, Any]:
        """The `session` object of `session.created` / `session.updated`."""
        return build_session_object(
            self._settings,
            session_id=self._session_id,
            state=self.life.state.wire,
            epoch=self._epoch,
            capabilities=self._caps.to_dict(),
            playback=playback.totals(self._conversation),
            live=live_state(self._conversation, self._inputs, self._retained),
        ).to_dict()

    def open(self, now: float) -> list[Output]:
        """The handshake answer: `session.created` (unsequenced) then `session.updated`."""
        return attach.open_session(self, now)

    def handle(self, event: dict[str, Any], now: float) -> list[Output]:
        """Process one client event (any JSON object); never raises on its content."""
        self.life.touch(now)
        cid = client_event_id(event)
        etype = event.get("type")
        try:
            closing = self._stream.closing is not None  # a continuous stream draining
            if (self.life.state is not SessionState.OPEN or closing) and isinstance(etype, str):
                raise Reject(ErrorCode.SESSION_CLOSED, "the session is closing", None)
            try:
                decoded = decode_client_event(event)  # bad type, unknown type, bad fields
            except SchemaError as exc:
                raise Reject.schema(exc) from None
            HANDLERS[decoded.TYPE](self, decoded, now)
        except Reject as rej:
            _endings.reject(self, rej, cid, now)
        except Exception:
            log.exception("session %s: internal error handling %s", self._session_id, etype)
            _endings.fail(
                self, ErrorCode.INTERNAL_ERROR, "internal server error", now, close_code=1011
            )
        timers.advance(self, now)
        return self._emitter.drain()

    def tick(self, now: float) -> list[Output]:
        """Run due timers: pipeline items, output chunks, journal age, idle TTL, grace."""
        timers.tick(self, now)
        return self._emitter.drain()

    def next_deadline(self) -> float | None:
        """The earliest time `tick` has something to do."""
        return timers.next_deadline(self)

    def shut_down(self, now: float) -> list[Output]:
        """The server stops: the response cancelled, `session.closed {reason: "shutdown"}`."""
        return _endings.shut_down(self, now)

    def detach(self, now: float) -> list[Output]:
        """The socket dropped without `session.close`: keep running for the grace, or close."""
        return attach.detach(self, now)

    def journal_gap(self, last_seq: int) -> bool:
        """Whether a resume from `last_seq` needs events the journal no longer holds."""
        return attach.journal_gap(self, last_seq)

    def resume(self, last_seq: int, now: float) -> list[Output]:
        """Reattach (token and journal already checked): `session.resumed`, then the replay."""
        return attach.resume(self, last_seq, now)

    def replaced_outputs(self, old_generation: int) -> list[Output]:
        """What the superseded socket gets on takeover: `session.replaced`, then a close."""
        return attach.replaced_outputs(self, old_generation)

    # --- actions the handlers share (`SessionPort`) ---

    def emit(self, event: ServerEvent, now: float) -> None:
        """Send a server event."""
        self._emitter.emit(event, now)

    def advance_epoch(self) -> int:
        """Start a new interruption epoch; the new value."""
        self._epoch += 1
        return self._epoch

    def update_settings(self, settings: SessionSettings, now: float) -> None:
        """Adopt accepted settings and announce them (`session.updated`)."""
        old, self._settings = self._settings, settings
        self._inputs.reformat(old, settings)
        self.emit(SessionUpdated(session=self.session_object()), now)

    def fail(
        self,
        code: str,
        message: str,
        now: float,
        *,
        close_code: int = 1011,
        reason: str = "error",
        endings: Sequence[ServerEvent] = (),
    ) -> None:
        """Session-fatal error (scope S): error, failed responses, `session.closed`, close.

        `endings` are failed `response.done` events re-sent for endings the client never got.
        """
        _endings.fail(
            self, code, message, now, close_code=close_code, reason=reason, endings=endings
        )

    def reject(self, rej: Reject, cid: str | None, now: float) -> None:
        """Emit the error for a refused client event; fatal codes end the session."""
        _endings.reject(self, rej, cid, now)

    def finish(self, reason: str, now: float, *, close_code: int | None = 1000) -> None:
        """Emit `session.closed` as the last event and close (code None: no socket to close)."""
        _endings.finish(self, reason, now, close_code=close_code)

    def interrupt(self, reason: str, now: float) -> None:
        """Stop the active response: `output_audio_buffer.cleared`, then a cancelled done."""
        responses.interrupt(self, reason, now)

    def response_finished(self, now: float) -> None:
        """A response ended: a function output's follow-up, or one for turns deferred behind it."""
        responses.response_finished(self, now)
