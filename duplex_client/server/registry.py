"""Sessions by id: open (max sessions), resume (tokens, takeover), and what remains after close."""

from __future__ import annotations

import hmac
import logging
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from duplex_client.protocol.client_events import SessionResume, SessionUpdate
from duplex_client.protocol.duplex_events import HandshakeError
from duplex_client.protocol.errors import ErrorCode
from duplex_client.protocol.fields import SchemaError
from duplex_client.protocol.server_events import SessionResyncRequired
from duplex_client.server import ids
from duplex_client.server.config import ServerConfig
from duplex_client.server.emitter import CloseSocket, Emitter, Output
from duplex_client.server.engine.base import Engine
from duplex_client.server.errors import Reject, client_event_id, error_event
from duplex_client.server.session import DuplexSession
from duplex_client.server.settings import apply_update, initial_settings

log = logging.getLogger("duplex_client.server")
_KEEP_CLOSED = 16
#: Refusals of the session object itself: vLLM-Omni 0.30.0 checks it in its handler
#: (`DuplexSessionConfig.from_realtime` raises a `ValueError`), which answers any such failure
#: at open with `invalid_session_config`; a model plugin's refusals (a reference voice, a
#: runtime key) and the capacity check keep their own codes.
_SESSION_OBJECT_CODES = frozenset(
    {
        ErrorCode.BAD_EVENT,
        ErrorCode.UNSUPPORTED_AUDIO_FORMAT,
        ErrorCode.UNSUPPORTED_TURN_DETECTION,
        ErrorCode.INVALID_SESSION_UPDATE,
        ErrorCode.INVALID_TOOLS,
    }
)


@dataclass(frozen=True, slots=True)
class ResumeResult:
    """A resume attempt: the session on success, what to send, and the superseded generation."""

    session: DuplexSession | None
    outputs: list[Output]
    replaced_generation: int | None = None


class Registry:
    """Live sessions (attached or in their disconnect grace) of one server; sans-I/O."""

    def __init__(
        self, config: ServerConfig, engine_factory: Callable[[], Engine] | None = None
    ) -> None:
        self.config = config
        self.profile = config.resolve_profile()
        self.engine_factory = engine_factory or config.make_engine
        self.sessions: dict[str, DuplexSession] = {}
        self.closed: OrderedDict[str, DuplexSession] = OrderedDict()
        self._handshake = Emitter(beta_names=config.beta_names, journal=None)
        #: Where new session ids come from (tests force a collision through it).
        self.new_session_id: Callable[[], str] = ids.session_id

    def handshake_error(self, rej: Reject, cid: str | None, close_code: int = 1000) -> list[Output]:
        """A handshake-fatal error (scope H): the nested error event, then a close.

        vLLM-Omni 0.30.0's handler renders every handshake and resume refusal through its typed
        error event (`entrypoints/duplex/serving.py` `envelope.error_payload`), nested like any
        other error, then returns, which closes the socket normally (1000). It echoes no client
        `event_id` (`cid`); `param` names the field at fault where there is one.
        """
        event = error_event(rej.code, rej.message, param=rej.param)
        return [self._handshake.build(event), CloseSocket(close_code, rej.code)]

    def refuse_turn_based(self) -> list[Output]:
        """`?duplex=0` asks for the turn-based handler this server does not have."""
        event = HandshakeError(error="Realtime API is not available", code=ErrorCode.UNSUPPORTED)
        return [self._handshake.build(event), CloseSocket(1000, "")]

    def wrong_model(self, model: str | None) -> list[Output] | None:
        """The refusal of a request naming a model this server does not serve (None: fine)."""
        served = self.config.served_model
        if served is None or not model or model == served:
            return None
        rej = Reject(
            ErrorCode.UNSUPPORTED_MODEL, f"Model '{model}' is not available", param="model"
        )
        return self.handshake_error(rej, None, close_code=1008)

    def open(self, event: dict[str, Any], now: float) -> tuple[DuplexSession | None, list[Output]]:
        """Handle a first-message `session.update`: a new session, or a handshake error."""
        cid = client_event_id(event)
        session_obj = event.get("session")
        if isinstance(session_obj, dict) and isinstance(session_obj.get("model"), str):
            refused = self.wrong_model(session_obj["model"])
            if refused is not None:
                return None, refused
        limits = self.config.limits
        if len(self.sessions) >= limits.max_sessions:
            rej = Reject(
                ErrorCode.RESOURCE_EXHAUSTED,
                f"the server is at its session limit ({limits.max_sessions})",
            )
            return None, self.handshake_error(rej, cid)
        try:
            try:
                update = SessionUpdate.decode(event)
            except SchemaError as exc:
                raise Reject.schema(exc) from None
            settings = apply_update(
                update.session,
                initial_settings(self.profile, limits.default_idle_timeout_s),
                profile=self.profile,
                handshake=True,
                audio_started=False,
            )
        except Reject as rej:
            if rej.code in _SESSION_OBJECT_CODES:
                message = f"{rej.code}: {rej.message}"
                rej = Reject(ErrorCode.INVALID_SESSION_CONFIG, message, rej.param)
            return None, self.handshake_error(rej, cid)
        sid = self.new_session_id()
        if self.get(sid) is not None:
            exists = Reject(ErrorCode.SESSION_EXISTS, f"session {sid} already exists")
            return None, self.handshake_error(exists, cid)
        session = DuplexSession(
            session_id=sid,
            profile=self.profile,
            settings=settings,
            engine=self.engine_factory(),
            limits=limits,
            faults=self.config.faults,
            beta_names=self.config.beta_names,
            resumable=self.config.resumable and self.profile.resumable,
            now=now,
        )
        session.on_closed = self._on_closed
        self.sessions[session.session_id] = session
        log.info(
            "session %s opened (profile %s, model %r)",
            session.session_id,
            self.profile.name,
            settings.model,
        )
        return session, session.open(now)

    def resume(self, event: dict[str, Any], now: float) -> ResumeResult:
        """Handle a first-message `session.resume` (scope H errors leave the session untouched).

        In vLLM-Omni 0.30.0's order (`entrypoints/duplex/serving.py` `_resume`): the request's
        shape (`invalid_session_resume`), the session (`session_resume_expired` for an unknown
        or closed one), the token, then the journal: a gap is answered with
        `session.resync_required {reason: "journal_gap"}` and the socket ends without attaching
        (the session stays detached in its grace; the client must start a new session).
        """
        cid = client_event_id(event)
        if not (self.config.resumable and self.profile.resumable):
            rej = Reject(ErrorCode.UNSUPPORTED_SESSION_RESUME, "this server does not resume")
            return ResumeResult(None, self.handshake_error(rej, cid))
        try:
            request = SessionResume.decode(event)
        except SchemaError as exc:
            rej = Reject(ErrorCode.INVALID_SESSION_RESUME, exc.message, exc.param)
            return ResumeResult(None, self.handshake_error(rej, cid))
        sid, token = request.session_id, request.resume_token
        seq = request.last_received_server_event_seq
        session = self.sessions.get(sid)
        if session is None or not session.can_resume:
            rej = Reject(
                ErrorCode.SESSION_RESUME_EXPIRED,
                f"unknown or expired duplex session: {sid}",
                "session_id",
            )
            return ResumeResult(None, self.handshake_error(rej, cid))
        if not _same(token, session.life.resume_token):
            if _same(token, session.life.previous_token):
                rej = Reject(
                    ErrorCode.SESSION_RESUME_CONFLICT,
                    "another resume already used this token",
                    "resume_token",
                )
            else:
                rej = Reject(ErrorCode.INVALID_RESUME_TOKEN, "wrong resume token", "resume_token")
            return ResumeResult(None, self.handshake_error(rej, cid))
        if session.journal_gap(seq):
            resync = SessionResyncRequired(session_id=sid, reason="journal_gap")
            log.info("session %s: resume from seq %d falls in a journal gap", sid, seq)
            gap: list[Output] = [self._handshake.build(resync), CloseSocket(1000, "journal_gap")]
            return ResumeResult(None, gap)
        old_generation = session.life.generation
        outputs = session.resume(seq, now)
        log.info(
            "session %s resumed (attachment %d, from seq %d)",
            sid,
            session.life.generation,
            seq,
        )
        return ResumeResult(session, outputs, old_generation)

    def get(self, session_id: str) -> DuplexSession | None:
        """A live or recently closed session."""
        return self.sessions.get(session_id) or self.closed.get(session_id)

    def _on_closed(self, session: DuplexSession) -> None:
        self.sessions.pop(session.session_id, None)
        self.closed[session.session_id] = session
        while len(self.closed) > _KEEP_CLOSED:
            self.closed.popitem(last=False)
        log.info("session %s ended (%s)", session.session_id, session.life.close_reason)


def _same(given: str, expected: str | None) -> bool:
    return expected is not None and hmac.compare_digest(given.encode(), expected.encode())
