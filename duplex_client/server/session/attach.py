"""The socket's side of a session: the handshake, a dropped socket, resume and takeover."""

from __future__ import annotations

from typing import TYPE_CHECKING

from duplex_client.protocol.objects import ContentPart, Item, ResumeInput
from duplex_client.protocol.server_events import (
    SessionCreated,
    SessionReplaced,
    SessionResumed,
    SessionUpdated,
)
from duplex_client.server import ids
from duplex_client.server.emitter import CloseSocket, Output, Send
from duplex_client.server.lifecycle import SessionState
from duplex_client.server.session.endings import finish

if TYPE_CHECKING:
    from duplex_client.server.session.machine import DuplexSession


def open_session(session: DuplexSession, now: float) -> list[Output]:
    """The handshake answer: `session.created` (unsequenced) then `session.updated`."""
    token = session.life.resume_token
    created = SessionCreated(
        session=session.session_object(),
        resume_token=token,
        attachment_generation=session.life.generation if token is not None else None,
    )
    session.emit(created, now)
    session.emit(SessionUpdated(session=session.session_object()), now)
    # the older extra_body spelling wins, as vLLM-Omni 0.30.0's MiniCPM-o plugin reads it
    settings = session.settings
    text = settings.extra_body.get("duplex_initial_user_text")
    text = text or settings.initial_user_text
    if isinstance(text, str) and text:
        content = [ContentPart(type="input_text", text=text)]
        item = Item(id=ids.item_id(), role="user", status="completed", content=content)
        session.conversation.add_item(item.to_dict())
    return session.emitter.drain()


def detach(session: DuplexSession, now: float) -> list[Output]:
    """The socket dropped without `session.close`: keep running for the grace, or close."""
    if session.life.state is not SessionState.OPEN:
        return []
    if session.can_resume:
        session.life.detach(now)
    else:
        session.conversation.cancel("disconnect", now)
        finish(session, "disconnect", now, close_code=None)
    return session.emitter.drain()


def journal_gap(session: DuplexSession, last_seq: int) -> bool:
    """Whether a resume from `last_seq` needs events the journal no longer holds."""
    journal = session.journal
    return journal is None or journal.replay_after(last_seq) is None


def resume(session: DuplexSession, last_seq: int, now: float) -> list[Output]:
    """Reattach (token and journal already checked): `session.resumed`, then the replay."""
    session.life.reattach(now)
    journal = session.journal
    replay = journal.replay_after(last_seq) if journal is not None else None
    position = ResumeInput(
        last_event_id=session.ledger.last_event_id,
        audio_end_ms=session.inputs.audio_end_ms,
        append_count=session.ledger.append_count,
    )
    resumed = SessionResumed(
        session_id=session.session_id,
        resume_token=session.life.resume_token,
        attachment_generation=session.life.generation,
        session={},
        input=position.to_dict(),
    )
    session.emit(resumed, now)
    for data in replay or ():
        session.emitter.raw(Send("replay", data))
    return session.emitter.drain()


def replaced_outputs(session: DuplexSession, old_generation: int) -> list[Output]:
    """What the superseded socket gets on takeover: `session.replaced`, then a close."""
    send = session.emitter.build(
        SessionReplaced(session_id=session.session_id, attachment_generation=old_generation)
    )
    return [send, CloseSocket(1000, "session_replaced")]
