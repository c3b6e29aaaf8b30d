"""The sans-I/O session state machine: client events in, server events out, time injected."""

from __future__ import annotations

import logging
from collections import OrderedDict, deque
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, Final

from duplex_client.framing.units import UnitGrid
from duplex_client.protocol.capabilities import Capabilities
from duplex_client.protocol.client_events import decode_client_event
from duplex_client.protocol.errors import ErrorCode
from duplex_client.protocol.fields import SchemaError
from duplex_client.protocol.objects import ContentPart, Item, ResumeInput
from duplex_client.protocol.response_events import OutputAudioBufferCleared
from duplex_client.protocol.server_events import (
    SessionClosed,
    SessionCreated,
    SessionExpired,
    SessionReplaced,
    SessionResumed,
    SessionResyncRequired,
    SessionUpdated,
)
from duplex_client.server import ids, playback, turns
from duplex_client.server.assembler import Unit, UnitAssembler
from duplex_client.server.conversation import Conversation, Turn
from duplex_client.server.emitter import CloseSocket, Emitter, Output, Send
from duplex_client.server.engine.base import Engine
from duplex_client.server.errors import Reject, client_event_id, error_event, is_session_fatal
from duplex_client.server.faults import Faults
from duplex_client.server.handlers import HANDLERS
from duplex_client.server.intake import Work
from duplex_client.server.journal import Journal
from duplex_client.server.limits import InputBudget, Limits
from duplex_client.server.profiles import Profile
from duplex_client.server.settings import SessionSettings
from duplex_client.server.vad_turns import VadTurns

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
        self.session_id = session_id
        self.profile = profile
        self.settings = settings
        self.engine = engine
        self.limits = limits
        self.faults = faults
        self.caps: Capabilities = profile.capabilities(limits, resumable=resumable)
        self.resumable = resumable
        journal = Journal(limits.journal_bytes, limits.journal_retention_s) if resumable else None
        self.emitter = Emitter(beta_names=beta_names, journal=journal)
        self.resume_token: str | None = ids.resume_token() if resumable else None
        self.previous_token: str | None = None
        self.attachment_generation = 1
        self.epoch = 0
        self.state = "open"
        self.close_reason: str | None = None
        self.opened_at = now
        self.last_activity = now
        self.detached_at: float | None = None
        self.budget = InputBudget(limits.max_pending_input_bytes)
        self.assembler = self._new_assembler()
        self.conversation = Conversation(self)
        self.pipeline: deque[Work] = deque()
        self._pipeline_free_at = now
        self.manual_queue: list[Unit] = []
        self.turn_units: list[Unit] = []
        self.turn_item_id: str | None = None
        self.pending_turns: list[Turn] = []
        self.next_turn_id = 1
        self.commit_count = 0
        self.response_create_count = 0
        self.audio_started = False
        self.seen_ids: OrderedDict[str, None] = OrderedDict()
        #: The latest accepted appends as §10-shaped rows (tests, debugging); bounded.
        self.appends: deque[dict[str, Any]] = deque(maxlen=MAX_APPEND_ROWS)
        self.append_count = 0
        self.last_input_event_id: str | None = None
        self.drop_fault_used = False
        self.on_closed: Callable[[DuplexSession], None] | None = None
        #: Called with the job of each pending decision; the I/O shell ticks when it is done.
        self.on_pending: Callable[[Future[Any]], None] | None = None
        #: Server-side VAD (profiles with one, e.g. joyai with the speech engine).
        self.vad_turns = VadTurns(settings) if profile.has_server_vad else None

    def _new_assembler(self) -> UnitAssembler:
        grid = UnitGrid(
            first_unit_ms=self.profile.first_unit_ms,
            chunk_period_ms=self.profile.chunk_period_ms,
            sample_rate_hz=self.settings.input_rate,
        )
        return UnitAssembler(grid, self.settings.bytes_per_sample)

    # --- public surface used by the registry and the envelope ---

    @property
    def closed(self) -> bool:
        """Whether the session has ended (closed or expired)."""
        return self.state == "closed"

    @property
    def journal(self) -> Journal | None:
        """The replay journal (None when not resumable or after an overflow)."""
        return self.emitter.journal

    @property
    def can_resume(self) -> bool:
        """Whether a `session.resume` may attach to this session now."""
        return self.resumable and self.journal is not None and not self.closed

    def session_object(self) -> dict[str, Any]:
        """The `session` object of `session.created` / `session.updated`."""
        return self.settings.session_object(
            session_id=self.session_id,
            state=self.state,
            epoch=self.epoch,
            capabilities=self.caps.to_dict(),
            playback=playback.totals(self.conversation),
        ).to_dict()

    def open(self, now: float) -> list[Output]:
        """The handshake answer: `session.created` (unsequenced) then `session.updated`."""
        resumable = self.resume_token is not None
        created = SessionCreated(
            session=self.session_object(),
            resume_token=self.resume_token,
            attachment_generation=self.attachment_generation if resumable else None,
        )
        self.emitter.emit(created, now)
        self.emitter.emit(SessionUpdated(session=self.session_object()), now)
        text = self.settings.extra_body.get("duplex_initial_user_text")
        if isinstance(text, str) and text:
            content = [ContentPart(type="input_text", text=text)]
            item = Item(id=ids.item_id(), role="user", status="completed", content=content)
            self.conversation.add_item(item.to_dict())
        return self.emitter.drain()

    def handle(self, event: dict[str, Any], now: float) -> list[Output]:
        """Process one client event (any JSON object); never raises on its content."""
        self.last_activity = now
        cid = client_event_id(event)
        etype = event.get("type")
        try:
            if self.state != "open" and isinstance(etype, str):
                raise Reject(ErrorCode.SESSION_CLOSED, "the session is closing", None)
            try:
                decoded = decode_client_event(event)  # bad type, unknown type, bad fields
            except SchemaError as exc:
                raise Reject.schema(exc) from None
            HANDLERS[decoded.TYPE](self, decoded, now)
        except Reject as rej:
            self.reject(rej, cid, now)
        except Exception:
            log.exception("session %s: internal error handling %s", self.session_id, etype)
            self.fail(ErrorCode.INTERNAL_ERROR, "internal server error", now, close_code=1011)
        self._advance(now)
        return self.emitter.drain()

    def tick(self, now: float) -> list[Output]:
        """Run due timers: pipeline items, output chunks, journal age, idle TTL, grace."""
        if self.state == "open":
            if self.journal is not None:
                self.journal.evict(now)
            if (
                self.detached_at is not None
                and now >= self.detached_at + self.limits.disconnect_grace_s
            ):
                self._expire("disconnect_grace_expired", now)
            elif now >= self.last_activity + self.settings.idle_timeout_s:
                self._expire("idle_ttl_expired", now)
            else:
                self._advance(now)
        return self.emitter.drain()

    def next_deadline(self) -> float | None:
        """The earliest time `tick` has something to do."""
        if self.state != "open":
            return None
        times = [self.last_activity + self.settings.idle_timeout_s]
        if self.pipeline and self.pipeline[0].ready:
            times.append(self.pipeline[0].ready_at)  # else `on_pending` wakes the shell
        due = self.conversation.next_due()
        if due is not None:
            times.append(due)
        if self.detached_at is not None:
            times.append(self.detached_at + self.limits.disconnect_grace_s)
        if self.journal is not None and (expiry := self.journal.next_expiry()) is not None:
            times.append(expiry)
        return min(times)

    def detach(self, now: float) -> list[Output]:
        """The socket dropped without `session.close`: keep running for the grace, or close."""
        if self.state != "open":
            return []
        if self.can_resume:
            self.detached_at = now
        else:
            self.conversation.cancel("disconnect", now)
            self.finish("disconnect", now, close_code=None)
        return self.emitter.drain()

    def resume(self, last_seq: int, now: float) -> list[Output]:
        """Reattach (token already checked): `session.resumed`, then the replay or a resync."""
        self.previous_token = self.resume_token
        self.resume_token = ids.resume_token()
        self.attachment_generation += 1
        self.detached_at = None
        self.last_activity = now
        replay = self.journal.replay_after(last_seq) if self.journal is not None else None
        position = ResumeInput(
            last_event_id=self.last_input_event_id,
            audio_end_ms=self.assembler.audio_end_ms,
            append_count=self.append_count,
        )
        resumed = SessionResumed(
            session_id=self.session_id,
            resume_token=self.resume_token,
            attachment_generation=self.attachment_generation,
            session={},
            input=position.to_dict(),
        )
        self.emitter.emit(resumed, now)
        if replay is None:
            self.emitter.journal = None
            self.emitter.emit(SessionResyncRequired(reason="journal_gap"), now)
        else:
            for data in replay:
                self.emitter.raw(Send("replay", data))
        return self.emitter.drain()

    def replaced_outputs(self, old_generation: int) -> list[Output]:
        """What the superseded socket gets on takeover: `session.replaced`, then a close."""
        send = self.emitter.build(
            SessionReplaced(session_id=self.session_id, attachment_generation=old_generation)
        )
        return [send, CloseSocket(1000, "session_replaced")]

    def fail(self, code: str, message: str, now: float, *, close_code: int = 1011) -> None:
        """Session-fatal error (scope S): error, `session.closed {reason: error}`, close."""
        if self.state != "open":
            return
        self.emitter.emit(error_event(code, message), now)
        self.conversation.fail("error", now)
        self.finish("error", now, close_code=close_code)

    def reject(self, rej: Reject, cid: str | None, now: float) -> None:
        """Emit the error for a refused client event; fatal codes end the session."""
        if is_session_fatal(rej.code):
            self.emitter.emit(
                error_event(rej.code, rej.message, param=rej.param, client_event_id=cid), now
            )
            self.conversation.fail("error", now)
            self.finish("error", now, close_code=1011)
            return
        self.emitter.emit(
            error_event(rej.code, rej.message, param=rej.param, client_event_id=cid), now
        )

    def finish(self, reason: str, now: float, *, close_code: int | None = 1000) -> None:
        """Emit `session.closed` as the last event and close (code None: no socket to close)."""
        if self.state == "closed":
            return
        self.emitter.emit(SessionClosed(session_id=self.session_id, reason=reason), now)
        self._end(reason, close_code)

    def _expire(self, reason: str, now: float) -> None:
        self.conversation.cancel("session_expired", now)
        self.emitter.emit(SessionExpired(session_id=self.session_id, reason=reason), now)
        self._end(reason, None if self.detached_at is not None else 1000)

    def _end(self, reason: str, close_code: int | None) -> None:
        self.state = "closed"
        self.close_reason = reason
        self.pipeline.clear()
        self.budget.reset()
        if close_code is not None:
            self.emitter.close(close_code, reason)
        if self.on_closed is not None:
            self.on_closed(self)

    # --- pipeline ---

    def enqueue(self, work: Work, processing_ms: int, now: float) -> None:
        """Queue work behind earlier items; it runs after `processing_ms` of model time."""
        if work.pending is not None and work.pending.job is not None and self.on_pending:
            self.on_pending(work.pending.job)
        start = max(now, self._pipeline_free_at)
        work.ready_at = start + processing_ms / 1000.0
        self._pipeline_free_at = work.ready_at
        self.pipeline.append(work)

    def _advance(self, now: float) -> None:
        while (
            self.state == "open"
            and self.pipeline
            and self.pipeline[0].ready_at <= now
            and self.pipeline[0].ready
        ):
            work = self.pipeline.popleft()
            work.settle()
            turns.execute(self, work, now)
            self.conversation.pump(now)
        if self.state == "open":
            self.conversation.pump(now)

    def response_finished(self, now: float) -> None:
        """A response ended: start one for turns deferred behind it."""
        if self.state != "open" or self.conversation.active is not None:
            return
        decided = [t.deferred for t in self.pending_turns if t.deferred is not None]
        if decided:
            turns, self.pending_turns = self.pending_turns, []
            self.conversation.start(
                decision=decided[-1], trigger="deferred_commit", unit=None, turns=turns, now=now
            )

    def interrupt(self, reason: str, now: float) -> None:
        """Stop the active response: `output_audio_buffer.cleared`, then a cancelled done."""
        active = self.conversation.active
        if active is None:
            return
        self.epoch += 1
        self.emitter.emit(OutputAudioBufferCleared(response_id=active.response_id), now)
        self.conversation.cancel(reason, now)
