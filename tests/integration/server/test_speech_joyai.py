"""The joyai profile with the speech engine: VAD turns, push-to-talk, camera turns, idle camera."""

from __future__ import annotations

from typing import Any

from duplex_client.protocol import ErrorCode
from tests.integration.server.conftest import MakeServer
from tests.integration.server.speech import (
    INSTRUCTION,
    SERVER_VAD,
    color_frame,
    needs_speech,
    of_type,
    quiet,
    send_pcm,
    spoken,
    transcripts,
)
from tests.integration.server.wire import Wire, append, session_update

pytestmark = needs_speech


def _vad_session() -> dict[str, Any]:
    return {
        "turn_detection": SERVER_VAD,
        "overlap_policy": "barge_in_on_speech",
        "playback_commit_policy": "ack_only",
        "extra_body": {"auto_response": True},
    }


def _ptt_session() -> dict[str, Any]:
    return {"turn_detection": None, "extra_body": {"auto_response": False}}


async def _camera_turn(wire: Wire, color: str, n: int) -> list[dict[str, Any]]:
    await wire.send(append(event_id=f"cam_{n}", frames=[color_frame(color)], is_speech=False))
    commit = {"type": "input_audio_buffer.commit", "response_create": True}
    await wire.send({**commit, "event_id": f"commit_cam_{n}"})
    return await wire.until("response.done")


async def test_vad_instruction_then_camera_turns_remember_the_instruction(
    make_server: MakeServer,
) -> None:
    server = await make_server(profile="joyai", engine="speech")
    wire = await Wire.connect(server.url)
    _, updated = await wire.open(**_vad_session())
    caps = updated["session"]["capabilities"]
    assert caps["implementation_level"] == "turn_based_duplex"
    assert updated["session"]["turn_detection"]["type"] == "server_vad"
    await wire.send(append(event_id="cam_red", frames=[color_frame("red")], is_speech=False))
    await send_pcm(wire, spoken(INSTRUCTION), "say")
    events = await wire.until("response.done")
    kinds = [e["type"] for e in events]
    started, stopped = (
        kinds.index("input_audio_buffer.speech_started"),
        kinds.index("input_audio_buffer.speech_stopped"),
    )
    committed = kinds.index("input_audio_buffer.committed")
    assert started < stopped < committed < kinds.index("response.created")
    ack = events[committed]
    assert ack["client_event_id"] is None and "no_response" not in ack
    assert ack["item_id"] == events[started]["item_id"] == events[stopped]["item_id"]
    (answer,) = transcripts(events)
    assert answer.startswith("You said: ") and answer.endswith(" I see red."), answer
    heard = answer.removeprefix("You said: ").split(".")[0]
    assert "color" in heard.split()
    first = await _camera_turn(wire, "blue", 1)
    second = await _camera_turn(wire, "green", 2)
    assert transcripts(first) == [f"I see blue. You asked: {heard}."]
    assert transcripts(second) == [f"I see green. You asked: {heard}."]
    await wire.close()


async def test_quiet_commit_gets_no_response_and_empty_commit_an_error(
    make_server: MakeServer,
) -> None:
    server = await make_server(profile="joyai", engine="speech")
    wire = await Wire.connect(server.url)
    await wire.open(**_ptt_session())
    await send_pcm(wire, quiet(1200), "hold")
    await wire.send(
        {"type": "input_audio_buffer.commit", "event_id": "evt_quiet", "response_create": True}
    )
    events = await wire.until("response.listen")
    (ack,) = of_type(events, "input_audio_buffer.committed")
    assert ack["client_event_id"] == "evt_quiet" and ack["no_response"] is True
    assert ack["event"]["no_response"] is True and ack["event"]["client_event_id"] == "evt_quiet"
    assert "response_id" not in events[-1]
    assert not of_type(events, "response.created")
    await wire.send(
        {"type": "input_audio_buffer.commit", "event_id": "evt_empty", "response_create": True}
    )
    err = await wire.error(ErrorCode.INPUT_AUDIO_BUFFER_EMPTY)
    assert err["error"]["event_id"] == "evt_empty"
    await wire.close()


async def test_push_to_talk_turn_answers_speech_and_frame(make_server: MakeServer) -> None:
    server = await make_server(profile="joyai", engine="speech")
    wire = await Wire.connect(server.url)
    await wire.open(**_ptt_session())
    yellow = color_frame("yellow")
    await send_pcm(wire, spoken(INSTRUCTION, tail_ms=200), "hold", frame_every=yellow)
    await wire.send(
        {"type": "input_audio_buffer.commit", "event_id": "evt_release", "response_create": True}
    )
    events = await wire.until("response.done")
    ack = of_type(events, "input_audio_buffer.committed")[0]
    assert ack["client_event_id"] == "evt_release" and "no_response" not in ack
    (answer,) = transcripts(events)
    assert answer.startswith("You said:") and "yellow" in answer and "color" in answer, answer
    await wire.close()


async def test_camera_only_commit_after_retained_speech_keeps_both(
    make_server: MakeServer,
) -> None:
    server = await make_server(profile="joyai", engine="speech")
    wire = await Wire.connect(server.url)
    await wire.open(**_ptt_session())
    await wire.send(append(event_id="cam_red", frames=[color_frame("red")], is_speech=False))
    await send_pcm(wire, spoken(INSTRUCTION, tail_ms=200), "hold")
    await wire.send(
        {"type": "input_audio_buffer.commit", "event_id": "evt_keep", "response_create": False}
    )
    kept = (await wire.until("input_audio_buffer.committed"))[-1]
    for n, color in enumerate(("green", "blue")):  # an idle camera: only the latest frame stays
        await wire.send(append(event_id=f"cam_{n}", frames=[color_frame(color)], is_speech=False))
    await wire.send(
        {"type": "input_audio_buffer.commit", "event_id": "evt_cam", "response_create": True}
    )
    events = await wire.until("response.done")
    merged = of_type(events, "input_audio_buffer.committed")[0]
    assert merged["client_event_id"] == "evt_cam" and merged["item_id"] == kept["item_id"]
    (answer,) = transcripts(events)
    assert "color" in answer and answer.endswith("I see blue."), answer
    created = of_type(events, "response.created")[0]
    indices = created["response"]["metadata"]["turn_unit_indices"]
    rows = {r["unit_index"]: r for r in server.appends() if r["unit_index"] is not None}
    kinds = [rows[i]["unit_kind"] if i in rows else "AUDIO" for i in indices]
    assert indices == sorted(indices)  # speech units, then camera frames, in capture order
    assert kinds[0] == "VISION" and kinds[-1] == "VISION"
    assert [i for i in indices if rows.get(i, {}).get("unit_kind") == "VISION"] == [0, indices[-1]]
    await wire.close()


async def test_speech_start_interrupts_the_active_response(make_server: MakeServer) -> None:
    server = await make_server(profile="joyai", engine="speech", speech_chunk_interval_ms=1000)
    wire = await Wire.connect(server.url)
    await wire.open(**_vad_session())
    await send_pcm(wire, spoken("hello can you hear me"), "a")
    first = await wire.until("response.output_audio.delta")
    rid = of_type(first, "response.created")[0]["response_id"]
    await send_pcm(wire, spoken("stop", tail_ms=0), "b")
    events = await wire.until(lambda e: e["type"] == "response.done" and e["response_id"] == rid)
    kinds = [e["type"] for e in events]
    assert kinds.index("input_audio_buffer.speech_started") < kinds.index(
        "output_audio_buffer.cleared"
    )
    done = events[-1]["response"]
    assert done["status"] == "cancelled"
    assert done["status_details"]["reason"] == "turn_detected"
    await wire.close()


async def test_a_silent_camera_never_fills_the_pending_buffer(make_server: MakeServer) -> None:
    server = await make_server(profile="joyai", engine="speech")
    for setup in (_vad_session(), _ptt_session()):
        wire = await Wire.connect(server.url)
        await wire.open(**setup)
        session = server.session()
        peak = 0
        for second in range(60):
            await send_pcm(wire, bytes(32000), f"s{second}", frame_every=color_frame("white"))
            await wire.send({"type": "session.heartbeat"})
            await wire.until("session.heartbeat_ack")
            held = sum(u.charge for u in session.inputs.open_units) + session.inputs.held_bytes
            peak = max(peak, held)
        assert peak < 2 * 32000 + 4 * len(color_frame("white")), peak
        assert len(session.inputs.open_units) <= 2
        await wire.send({"type": "session.close"})
        await wire.closed()


async def test_without_the_speech_engine_server_vad_is_unavailable(
    make_server: MakeServer,
) -> None:
    server = await make_server(profile="joyai", engine="scripted")
    wire = await Wire.connect(server.url)
    await wire.send(session_update(**_vad_session()))
    err = await wire.error(ErrorCode.SERVER_VAD_UNAVAILABLE)
    assert err["error"]["param"] == "turn_detection"  # a handshake error, nested
    ptt = await Wire.connect(server.url)
    _, updated = await ptt.open(**_ptt_session())
    assert updated["session"]["capabilities"]["implementation_level"] == "turn_based_duplex"
    await ptt.close()
