"""Conformance: per-session limits (one session never hurts another) and fault injection."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from duplex_client.protocol import ErrorCode
from duplex_client.server import Faults, Limits, ReferenceServer
from tests.integration.server.conftest import MakeServer
from tests.integration.server.wire import Wire, append, frame, tone


async def _turn(wire: Wire, n: int = 0) -> list[dict[str, Any]]:
    await wire.send(append(tone(600), event_id=f"evt_a{n}"))
    await wire.send({"type": "input_audio_buffer.commit", "event_id": f"evt_c{n}"})
    return await wire.until("response.done")


async def test_pending_input_limit_counts_queued_frames(make_server: MakeServer) -> None:
    server = await make_server(limits=Limits(max_pending_input_bytes=3000, max_sessions=2))
    wire = await Wire.connect(server.url)
    await wire.open(extra_body={"auto_response": False})
    other = await Wire.connect(server.url)
    await other.open()
    size = len(frame(0))
    n_fit = 3000 // size
    for i in range(n_fit):
        await wire.send(append(event_id=f"evt_v{i}", frames=[frame(i)], is_speech=False))
    await wire.send(append(event_id="evt_over", frames=[frame(99)], is_speech=False))
    err = await wire.error(ErrorCode.INPUT_BACKPRESSURE)
    assert err["error"]["event_id"] == "evt_over" and err["error"]["type"] == "rate_limit_error"
    assert (
        len(server.appends(server.session_ids()[0])) == n_fit
    )  # the rejected frame is not retained
    # the other session is not disturbed (same per-session limit, its own budget)
    await other.send(append(event_id="evt_o", frames=[frame(5)], is_speech=False))
    await other.send({"type": "input_audio_buffer.commit", "event_id": "evt_oc"})
    events = await other.until("response.done")
    assert events[-1]["response"]["status"] == "completed"
    # a commit releases the charge; then a frame fits again
    await wire.send(
        {"type": "input_audio_buffer.commit", "event_id": "evt_c", "response_create": False}
    )
    await wire.until("input_audio_buffer.committed")
    await wire.send(append(event_id="evt_again", frames=[frame(7)], is_speech=False))
    await wire.send({"type": "input_audio_buffer.clear", "event_id": "evt_clr"})
    await wire.until("input_audio_buffer.cleared")
    assert not any(e["type"] == "error" for e in wire.received[-3:])
    await wire.close()
    await other.close()


async def test_pending_audio_limit(make_server: MakeServer) -> None:
    server = await make_server(limits=Limits(max_pending_input_bytes=20_000))
    wire = await Wire.connect(server.url)
    await wire.open(extra_body={"auto_response": False})
    await wire.send(append(tone(500), event_id="evt_0"))  # 16 000 bytes buffered
    await wire.send(append(tone(200), event_id="evt_1"))  # +6 400: over
    await wire.error(ErrorCode.INPUT_BACKPRESSURE)
    await wire.send({"type": "input_audio_buffer.commit", "event_id": "evt_c"})
    ack = (await wire.until("input_audio_buffer.committed"))[-1]
    assert ack["audio_end_ms"] == 500
    assert server.session().inputs.held_bytes == 0
    await wire.close()


async def test_pending_turns_limit(make_server: MakeServer) -> None:
    server = await make_server(limits=Limits(max_pending_turns=2))
    wire = await Wire.connect(server.url)
    await wire.open()
    for n in range(3):
        await wire.send(append(tone(300), event_id=f"evt_a{n}"))
        await wire.send(
            {"type": "input_audio_buffer.commit", "event_id": f"evt_c{n}", "response_create": False}
        )
    err = await wire.error(ErrorCode.INPUT_BACKPRESSURE)
    assert err["error"]["event_id"] == "evt_c2"
    await wire.send({"type": "response.create", "event_id": "evt_r"})
    done = (await wire.until("response.done"))[-1]
    assert len(done["response"]["metadata"]["turn_ids"]) == 2
    await wire.send(
        {"type": "input_audio_buffer.commit", "event_id": "evt_c3", "response_create": False}
    )
    assert (await wire.until("input_audio_buffer.committed"))[-1]["client_event_id"] == "evt_c3"
    await wire.close()


async def test_output_buffer_overflow_closes_only_that_session(make_server: MakeServer) -> None:
    limits = Limits(output_buffer_bytes=10_000, output_buffer_events=512, max_sessions=2)
    server = await make_server(limits=limits)
    slow = await Wire.connect(server.url)
    await slow.open()
    other = await Wire.connect(server.url)
    await other.open()
    # one audio delta (~64 KB) is above the 10 KB output buffer: the session fails
    await slow.send(append(tone(600), event_id="evt_a"))
    await slow.send({"type": "input_audio_buffer.commit", "event_id": "evt_c"})
    _, events = await slow.closed()
    err = next(e for e in events if e["type"] == "error")
    assert err["error"]["code"] == ErrorCode.OUTPUT_BACKPRESSURE
    assert err["error"]["type"] == "rate_limit_error"
    done = next(e for e in events if e["type"] == "response.done")["response"]
    assert done["status"] == "failed"
    assert done["status_details"] == {"type": "failed", "reason": "output_backpressure"}
    assert events[-1]["type"] == "session.closed"
    assert events[-1]["reason"] == "output_backpressure"
    await other.send({"type": "session.heartbeat"})
    await other.until("session.heartbeat_ack")
    await other.close()


async def test_fault_drop_socket_then_resume(make_server: MakeServer) -> None:
    server = await make_server(faults=Faults(drop_after_events=6))
    wire = await Wire.connect(server.url)
    created, _ = await wire.open()
    await wire.send(append(tone(1200), event_id="evt_a"))
    await wire.send({"type": "input_audio_buffer.commit", "event_id": "evt_c"})
    _, got = await wire.closed()
    seen = [e["server_event_seq"] for e in [wire.received[1], *got] if "server_event_seq" in e]
    again = await Wire.connect(server.url)
    await again.send(
        {
            "type": "session.resume",
            "session_id": created["session"]["id"],
            "resume_token": created["resume_token"],
            "last_received_server_event_seq": max(seen),
        }
    )
    assert (await again.recv())["type"] == "session.resumed"
    rest = await again.until("response.done")
    assert rest[0]["server_event_seq"] == max(seen) + 1
    assert rest[-1]["response"]["status"] == "completed"
    await again.close()


async def test_fault_injected_error_code(make_server: MakeServer) -> None:
    server = await make_server(faults=Faults(error_code=ErrorCode.ENGINE_ERROR, error_at_unit=1))
    wire = await Wire.connect(server.url)
    await wire.open()
    await wire.send(append(tone(2000), event_id="evt_a"))
    code, events = await wire.closed()
    err = next(e for e in events if e["type"] == "error")
    assert err["error"]["code"] == ErrorCode.ENGINE_ERROR and err["error"]["type"] == "server_error"
    assert events[-1]["type"] == "session.closed" and events[-1]["reason"] == "error"
    assert code == 1011


async def test_fault_request_local_error_code(make_server: MakeServer) -> None:
    server = await make_server(faults=Faults(error_code=ErrorCode.COMMIT_ABORTED, error_at_unit=0))
    wire = await Wire.connect(server.url)
    await wire.open()
    await wire.send(append(tone(1000), event_id="evt_a"))
    await wire.error(ErrorCode.COMMIT_ABORTED)
    await wire.send({"type": "session.heartbeat"})
    await wire.until("session.heartbeat_ack")
    await wire.close()


async def test_fault_latency_keeps_order(make_server: MakeServer) -> None:
    server = await make_server(faults=Faults(unit_latency_ms=30, slow_units={0: 300}))
    wire = await Wire.connect(server.url)
    await wire.open()
    await wire.send(append(tone(2400), event_id="evt_a"))
    await wire.send({"type": "input_audio_buffer.commit", "event_id": "evt_c"})
    events = await wire.until("response.done")
    types = [e["type"] for e in events]
    listens = [
        e["response"]["metadata"]["unit_index"] for e in events if e["type"] == "response.listen"
    ]
    assert listens == [0, 1]
    assert types.index("response.listen") < types.index("input_audio_buffer.committed")


async def test_fault_delayed_session_created(make_server: MakeServer) -> None:
    server = await make_server(faults=Faults(created_delay_ms=200))
    wire = await Wire.connect(server.url)
    await wire.send({"type": "session.update", "event_id": "evt_u", "session": {"model": "m"}})
    with pytest.raises(TimeoutError):
        await wire.recv(timeout=0.01)  # nothing arrives before the delay has passed
    assert (await wire.recv())["type"] == "session.created"
    await wire.close()


async def test_many_sessions_isolated(make_server: MakeServer) -> None:
    server: ReferenceServer = await make_server(limits=Limits(max_sessions=4))
    wires = [await Wire.connect(server.url) for _ in range(4)]
    for w in wires:
        await w.open()
    await wires[0].send("garbage")
    await wires[1].send(append(event_id="evt_bad", frames=["###"]))
    results = await asyncio.gather(*(_turn(w, i) for i, w in enumerate(wires[2:])))
    assert all(r[-1]["response"]["status"] == "completed" for r in results)
    await wires[0].error(ErrorCode.INVALID_JSON)
    await wires[1].error(ErrorCode.INVALID_VIDEO_FRAMES)
    for w in wires:
        await w.close()
