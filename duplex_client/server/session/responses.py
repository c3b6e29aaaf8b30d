"""The session's hold on its responses: interrupting the active one, starting the next."""

from __future__ import annotations

from typing import TYPE_CHECKING

from duplex_client.protocol.response_events import OutputAudioBufferCleared
from duplex_client.server import tools

if TYPE_CHECKING:
    from duplex_client.server.session.machine import DuplexSession


def interrupt(session: DuplexSession, reason: str, now: float) -> None:
    """Stop the active response: `output_audio_buffer.cleared`, then a cancelled done."""
    active = session.conversation.active
    if active is None:
        return
    session.advance_epoch()
    if reason == "barge_in":
        session.turn.signal("barge_in")
    session.emit(OutputAudioBufferCleared(response_id=active.response_id), now)
    session.conversation.cancel(reason, now)


def response_finished(session: DuplexSession, now: float) -> None:
    """A response ended: a function output's follow-up, or one for turns deferred behind it."""
    if not session.life.state.running or session.conversation.active is not None:
        return
    if tools.follow_up(session, now):
        return
    retained = session.retained
    decision = retained.latest_deferred()
    if decision is not None:
        turns = retained.take()
        session.conversation.start(
            decision=decision, trigger="deferred_commit", unit=None, turns=turns, now=now
        )
