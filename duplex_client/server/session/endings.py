"""How a session ends: fatal errors, refused events, `session.closed`, expiry and shutdown."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from duplex_client.protocol.server_events import ServerEvent, SessionExpired
from duplex_client.server.backpressure import close_notice
from duplex_client.server.emitter import Output
from duplex_client.server.errors import Reject, error_event, is_session_fatal

if TYPE_CHECKING:
    from duplex_client.server.session.machine import DuplexSession


def fail(
    session: DuplexSession,
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
    if not session.life.state.running:
        return
    session.emit(error_event(code, message), now)
    for ending in endings:
        session.emit(ending, now)
    session.conversation.fail(reason, now)
    finish(session, reason, now, close_code=close_code)


def reject(session: DuplexSession, rej: Reject, cid: str | None, now: float) -> None:
    """Emit the error for a refused client event; fatal codes end the session."""
    session.emit(error_event(rej.code, rej.message, param=rej.param, client_event_id=cid), now)
    if is_session_fatal(rej.code):
        session.conversation.fail("error", now)
        finish(session, "error", now, close_code=1011)


def finish(
    session: DuplexSession, reason: str, now: float, *, close_code: int | None = 1000
) -> None:
    """Emit `session.closed` as the last event and close (code None: no socket to close)."""
    if session.closed:
        return
    notice = close_notice(session.session_id, session.epoch, reason, session.emitter)
    session.emit(notice, now)
    end(session, notice.reason or reason, close_code)  # an over-long reason is not kept


def shut_down(session: DuplexSession, now: float) -> list[Output]:
    """The server stops: the response cancelled, `session.closed {reason: "shutdown"}`."""
    if session.closed:
        return []
    session.conversation.cancel("shutdown", now)
    finish(session, "shutdown", now)
    return session.emitter.drain()


def expire(session: DuplexSession, reason: str, now: float) -> None:
    """The disconnect grace ran out: the response cancelled, `session.expired`, the end."""
    session.conversation.cancel(reason, now)
    session.emit(SessionExpired(session_id=session.session_id, reason=reason), now)
    end(session, reason, None if session.life.was_detached else 1000)


def end(session: DuplexSession, reason: str, close_code: int | None) -> None:
    """Mark the session ended, drop its pipeline, close the socket, tell the owner."""
    session.life.end(reason)
    session.pipeline.clear()
    if close_code is not None:
        session.emitter.close(close_code, reason)
    if session.on_closed is not None:
        session.on_closed(session)
