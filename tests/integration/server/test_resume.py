"""Conformance: journal and acks, resume and replay, rotated tokens, takeover, expiry, resync."""

from __future__ import annotations

import asyncio
from typing import Any

from duplex_client.protocol import ErrorCode
from duplex_client.server import Limits, ReferenceServer
from duplex_client.server.lifecycle import SessionState
from tests.integration.server.conftest import MakeServer
from tests.integration.server.wire import (
    Wire,
    append,
    is_handshake_error,
    seqs,
    tone,
)


async def _turn(wire: Wire) -> list[dict[str, Any]]:
    await wire.send(append(tone(1200), event_id="evt_a"))
    await wire.send({"type": "input_audio_buffer.commit", "event_id": "evt_c"})
    return await wire.until("rate_limits.updated")  # the last event of a response (upstream)


def _drop(wire: Wire) -> None:
    wire.ws.transport.abort()


def _resume(created: dict[str, Any], seq: int, token: str | None = None) -> dict[str, Any]:
    return {
        "type": "session.resume",
        "event_id": "evt_resume",
        "session_id": created["session"]["id"],
        "resume_token": token or created["resume_token"],
        "last_received_server_event_seq": seq,
    }


async def _wait_for(predicate, timeout: float = 10.0) -> None:
    async with asyncio.timeout(timeout):
        while not predicate():
            await asyncio.sleep(0.02)


async def test_journal_sequence_numbers(server: ReferenceServer) -> None:
    wire = await Wire.connect(server.url)
    created, updated = await wire.open()
    assert "server_event_seq" not in created
    events = await _turn(wire)
    assert seqs([updated, *events]) == list(range(1, len(events) + 2))
    await wire.send({"type": "session.heartbeat"})
    ack = (await wire.until("session.heartbeat_ack"))[-1]
    assert "server_event_seq" not in ack
    journal = server.session().journal
    assert journal is not None and len(journal) == len(events) + 1
    await wire.send({"type": "session.event_ack", "server_event_seq": journal.last_seq})
    await wire.send({"type": "session.heartbeat"})
    await wire.until("session.heartbeat_ack")
    assert len(journal) == 0  # acknowledged events leave the journal
    await wire.close()


async def test_resume_replays_missed_events_with_a_rotated_token(server: ReferenceServer) -> None:
    wire = await Wire.connect(server.url)
    created, _ = await wire.open()
    events = await _turn(wire)
    last_seen = events[3]["server_event_seq"]
    _drop(wire)
    await _wait_for(lambda: server.session().state is SessionState.DETACHED)

    again = await Wire.connect(server.url)
    await again.send(_resume(created, last_seen))
    resumed = await again.recv()
    assert resumed["type"] == "session.resumed"
    assert "server_event_seq" not in resumed
    assert resumed["session_id"] == created["session"]["id"]
    assert resumed["attachment_generation"] == 2
    assert resumed["resume_token"] != created["resume_token"]
    assert resumed["input"] == {"last_event_id": "evt_c", "audio_end_ms": 1200, "append_count": 1}
    missed = [e for e in events if e["server_event_seq"] > last_seen]
    replay = [await again.recv() for _ in missed]
    assert replay == missed  # original order, ids and seqs
    # live events continue the sequence
    await again.send({"type": "session.close"})
    code, tail = await again.closed()
    assert code == 1000 and tail[-1]["type"] == "session.closed"
    assert tail[-1]["server_event_seq"] == missed[-1]["server_event_seq"] + 1


async def test_resume_errors_leave_the_session_untouched(server: ReferenceServer) -> None:
    wire = await Wire.connect(server.url)
    created, _ = await wire.open()
    _drop(wire)
    await _wait_for(lambda: server.session().state is SessionState.DETACHED)
    cases = [
        (
            {"type": "session.resume", "session_id": created["session"]["id"]},
            ErrorCode.INVALID_SESSION_RESUME,
        ),
        (
            _resume(created, 0) | {"last_received_server_event_seq": "x"},
            ErrorCode.INVALID_SESSION_RESUME,
        ),
        (_resume(created, 0, token="rt_wrong"), ErrorCode.INVALID_RESUME_TOKEN),
        (
            _resume(created, 0) | {"session_id": "duplex-" + "0" * 32},
            ErrorCode.SESSION_RESUME_EXPIRED,
        ),
    ]
    for event, code in cases:
        bad = await Wire.connect(server.url)
        await bad.send(event)
        err = await bad.error(code)
        assert is_handshake_error(err, code)  # nested, as vLLM-Omni 0.30.0's `_resume`
        close_code, _ = await bad.closed()
        assert close_code == 1000
    good = await Wire.connect(server.url)
    await good.send(_resume(created, 1))
    resumed = await good.recv()
    assert resumed["type"] == "session.resumed"
    # the rotated-away token now loses a race
    late = await Wire.connect(server.url)
    await late.send(_resume(created, 1))
    await late.error(ErrorCode.SESSION_RESUME_CONFLICT)
    await good.close()


async def test_takeover_replaces_the_old_socket(server: ReferenceServer) -> None:
    old = await Wire.connect(server.url)
    created, _ = await old.open()
    new = await Wire.connect(server.url)
    await new.send(_resume(created, 1))
    resumed = await new.recv()
    assert resumed["type"] == "session.resumed" and resumed["attachment_generation"] == 2
    code, events = await old.closed()
    assert events[-1]["type"] == "session.replaced"
    assert events[-1]["attachment_generation"] == 1
    assert events[-1]["session_id"] == created["session"]["id"]
    assert code == 1000
    events = await _turn(new)
    assert events[-2]["type"] == "response.done" and events[-1]["rate_limits"] == []
    assert events[-2]["response"]["status"] == "completed"
    await new.close()


async def test_resume_after_acked_events_reports_a_gap(server: ReferenceServer) -> None:
    wire = await Wire.connect(server.url)
    created, _ = await wire.open()
    events = await _turn(wire)
    await wire.send(
        {"type": "session.event_ack", "server_event_seq": events[5]["server_event_seq"]}
    )
    await wire.send({"type": "session.heartbeat"})
    await wire.until("session.heartbeat_ack")
    _drop(wire)
    await _wait_for(lambda: server.session().state is SessionState.DETACHED)
    again = await Wire.connect(server.url)
    await again.send(_resume(created, 2))
    # vLLM-Omni 0.30.0 (`serving.py` `_resume`): the gap is found before attaching; the
    # socket gets the resync and ends, and the session is not resumed
    resync = await again.recv()
    assert resync == {
        "type": "session.resync_required",
        "event_id": resync["event_id"],
        "session_id": created["session"]["id"],
        "reason": "journal_gap",
    }
    code, rest = await again.closed()
    assert code == 1000 and rest == []
    assert server.session().state is SessionState.DETACHED


async def test_resume_only_url_still_opens_with_session_update(server: ReferenceServer) -> None:
    """vLLM-Omni 0.30.0 (`RealtimeEnvelope.first_message`): `resume=1` only stops the autostart;
    a `session.update` first still opens a session."""
    wire = await Wire.connect(server.url, query="duplex=1&autostart=0&resume=1")
    created, _ = await wire.open()
    assert created["type"] == "session.created"
    await wire.close()


async def test_disconnect_grace_expiry(make_server: MakeServer) -> None:
    server = await make_server(limits=Limits(disconnect_grace_s=0.2))
    wire = await Wire.connect(server.url)
    created, _ = await wire.open()
    _drop(wire)
    await _wait_for(lambda: server.session_ids() == [])
    assert server.session().life.close_reason == "disconnect_grace_expired"
    again = await Wire.connect(server.url)
    await again.send(_resume(created, 1))
    await again.error(ErrorCode.SESSION_RESUME_EXPIRED)


async def test_an_idle_socket_detaches_and_the_session_can_be_resumed(
    server: ReferenceServer,
) -> None:
    """vLLM-Omni 0.30.0's read loop: an idle read timeout is a disconnect (resume grace)."""
    wire = await Wire.connect(server.url)
    created, _ = await wire.open(idle_timeout_s=0.2)
    code, events = await wire.closed()
    assert code == 1000 and events == []  # no terminal event: the session waits in its grace
    assert server.session().state is SessionState.DETACHED
    again = await Wire.connect(server.url)
    await again.send(_resume(created, 1))
    assert (await again.recv())["type"] == "session.resumed"
    await again.close()


async def test_a_stopping_server_closes_its_sessions_saying_shutdown() -> None:
    server = ReferenceServer(engine="scripted")
    await server.start()
    wire = await Wire.connect(server.url)
    await wire.open()
    stopping = asyncio.ensure_future(server.stop())
    code, events = await wire.closed()
    assert code == 1000
    await stopping
    assert events[-1]["type"] == "session.closed" and events[-1]["reason"] == "shutdown"


async def test_journal_overflow_requires_resync(make_server: MakeServer) -> None:
    server = await make_server(limits=Limits(journal_bytes=4096))
    wire = await Wire.connect(server.url)
    created, _ = await wire.open()
    events = await _turn(wire)
    i = next(i for i, e in enumerate(events) if e["type"] == "session.resync_required")
    assert events[i]["reason"] == "journal_overflow"
    assert all("server_event_seq" not in e for e in events[i:])
    assert all("server_event_seq" in e for e in events[:i])
    _drop(wire)
    again = await Wire.connect(server.url)
    await again.send(_resume(created, 1))
    await again.error(ErrorCode.SESSION_RESUME_EXPIRED)


async def test_journal_retention_gap(make_server: MakeServer) -> None:
    server = await make_server(limits=Limits(journal_retention_s=0.1))
    wire = await Wire.connect(server.url)
    created, _ = await wire.open()
    await _turn(wire)
    await _wait_for(lambda: len(server.session().journal or ()) == 0)
    _drop(wire)
    await _wait_for(lambda: server.session().state is SessionState.DETACHED)
    again = await Wire.connect(server.url)
    await again.send(_resume(created, 1))
    resync = await again.recv()
    assert resync["type"] == "session.resync_required" and resync["reason"] == "journal_gap"
    code, rest = await again.closed()
    assert code == 1000 and rest == []


async def test_non_resumable_server(make_server: MakeServer) -> None:
    server = await make_server(resumable=False)
    wire = await Wire.connect(server.url)
    created, updated = await wire.open()
    assert "resume_token" not in created
    assert created["session"]["capabilities"]["supports_session_resume"] is False
    assert "server_event_seq" not in updated
    _drop(wire)
    await _wait_for(lambda: server.session_ids() == [])
    assert server.session().life.close_reason == "disconnect"
    again = await Wire.connect(server.url)
    await again.send(_resume(created | {"resume_token": "rt_x"}, 0))
    await again.error(ErrorCode.UNSUPPORTED_SESSION_RESUME)


async def test_session_keeps_running_while_detached(make_server: MakeServer) -> None:
    from duplex_client.server import Script

    script = Script.from_dict({"chunk_interval_ms": 50})
    server = await make_server(script=script)
    wire = await Wire.connect(server.url)
    created, _ = await wire.open()
    await wire.send(append(tone(1200), event_id="evt_a"))
    await wire.send({"type": "input_audio_buffer.commit", "event_id": "evt_c"})
    first = await wire.until("response.output_audio.delta")
    _drop(wire)
    await _wait_for(lambda: server.session().conversation.active is None)  # finished while detached
    again = await Wire.connect(server.url)
    await again.send(_resume(created, first[-1]["server_event_seq"]))
    assert (await again.recv())["type"] == "session.resumed"
    replay = await again.until("response.done")
    assert replay[-1]["response"]["status"] == "completed"
    await again.close()
