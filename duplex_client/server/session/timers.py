"""The session's clock: due pipeline work, the idle TTL, the disconnect grace, journal age."""

from __future__ import annotations

from typing import TYPE_CHECKING

from duplex_client.server import execution
from duplex_client.server.lifecycle import SessionState
from duplex_client.server.session.endings import expire, finish

if TYPE_CHECKING:
    from duplex_client.server.session.machine import DuplexSession


def grace_end(session: DuplexSession) -> float | None:
    """When a detached session's disconnect grace ends (None when attached)."""
    return session.life.grace_deadline(session.limits.disconnect_grace_s)


def tick(session: DuplexSession, now: float) -> None:
    """Run due timers: pipeline items, output chunks, journal age, idle TTL, grace."""
    if not session.life.state.running:
        return
    journal = session.journal
    if journal is not None:
        journal.evict(now)
    end = grace_end(session)
    idle_now = now >= session.life.idle_deadline(session.settings.idle_timeout_s)
    if end is not None and now >= end:
        expire(session, "disconnect_grace_expired", now)
    elif idle_now and session.life.state is SessionState.OPEN:
        idle(session, now)
    else:
        advance(session, now)


def next_deadline(session: DuplexSession) -> float | None:
    """The earliest time `tick` has something to do."""
    if not session.life.state.running:
        return None
    journal = session.journal
    times = [session.life.idle_deadline(session.settings.idle_timeout_s)]
    for t in (
        session.pipeline.next_ready_at(),  # None while pending: `on_pending` wakes the shell
        session.conversation.next_due(),
        grace_end(session),
        journal.next_expiry() if journal is not None else None,
    ):
        if t is not None:
            times.append(t)
    return min(times)


def idle(session: DuplexSession, now: float) -> None:
    """No client event for `idle_timeout_s`: the socket is treated as dropped.

    As vLLM-Omni 0.30.0's read loop (`entrypoints/duplex/serving.py` `_read_loop`): a
    resumable session detaches into its disconnect grace and the socket closes (1000); any
    other ends, its response cancelled (`timeout`).
    """
    if session.can_resume:
        session.life.detach(now)
        session.emitter.close(1000, "idle_timeout")
        return
    session.conversation.cancel("timeout", now)
    finish(session, "disconnect", now)


def advance(session: DuplexSession, now: float) -> None:
    """Execute the pipeline's due work, pumping responses after each, then poll the stream."""
    pipeline, conversation = session.pipeline, session.conversation
    while session.life.state.running and (work := pipeline.pop_due(now)) is not None:
        execution.execute(session, work, now)
        conversation.pump(now)
    if session.life.state.running:
        conversation.pump(now)
        session.stream.poll(session, now)
