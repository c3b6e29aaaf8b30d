"""Conformance: every request-local error echoes the client `event_id`; the session continues."""

from __future__ import annotations

from typing import Any

import pytest

from duplex_client.protocol import ErrorCode
from duplex_client.server import Limits, Script
from tests.integration.server.conftest import MakeServer
from tests.integration.server.wire import PNG, Wire, append, b64, frame, silence, tone


async def _alive(wire: Wire) -> None:
    await wire.send({"type": "session.heartbeat", "event_id": "evt_alive"})
    await wire.until("session.heartbeat_ack")


def _bad(event_id: str, **fields: Any) -> dict[str, Any]:
    return {"type": "input_audio_buffer.append", "event_id": event_id, **fields}


CASES: list[tuple[dict[str, Any], str, str | None]] = [
    ({"type": "no.such.event", "event_id": "evt_e"}, ErrorCode.UNKNOWN_EVENT, "type"),
    ({"type": 7, "event_id": "evt_e"}, ErrorCode.BAD_EVENT, "type"),
    (_bad("evt_e"), ErrorCode.BAD_EVENT, "audio"),
    (_bad("evt_e", audio=""), ErrorCode.BAD_EVENT, "audio"),
    (_bad("evt_e", audio=12), ErrorCode.BAD_EVENT, "audio"),
    (_bad("evt_e", audio="!!not base64!!"), ErrorCode.BAD_AUDIO, "audio"),
    (_bad("evt_e", audio=b64(b"\x01\x02\x03")), ErrorCode.BAD_AUDIO, "audio"),
    (_bad("evt_e", audio=b64(silence(100)), is_speech="yes"), ErrorCode.BAD_EVENT, "is_speech"),
    (
        _bad("evt_e", audio=b64(silence(100)), format="pcm_f32le"),
        ErrorCode.UNSUPPORTED_AUDIO_FORMAT,
        "format",
    ),
    (
        _bad("evt_e", audio=b64(silence(100)), sample_rate_hz=24000),
        ErrorCode.UNSUPPORTED_AUDIO_FORMAT,
        "sample_rate_hz",
    ),
    (_bad("evt_e", video_frames="x"), ErrorCode.INVALID_VIDEO_FRAMES, "video_frames"),
    (
        _bad("evt_e", video_frames=[b64(b"GIF89a....")]),
        ErrorCode.INVALID_VIDEO_FRAMES,
        "video_frames",
    ),
    (_bad("evt_e", video_frames=["@@@"]), ErrorCode.INVALID_VIDEO_FRAMES, "video_frames"),
    (_bad("evt_e", video_frames=[""]), ErrorCode.INVALID_VIDEO_FRAMES, "video_frames"),
    (_bad("evt_e", video_frames=[None]), ErrorCode.INVALID_VIDEO_FRAMES, "video_frames"),
    (
        _bad("evt_e", video_frames=[frame(1), frame(2), frame(3)]),
        ErrorCode.INVALID_VIDEO_FRAMES,
        "video_frames",
    ),
    (
        _bad("evt_e", video_frames=[frame(1)], max_slice_nums=4),
        ErrorCode.INVALID_VIDEO_FRAMES,
        "max_slice_nums",
    ),
    (
        {"type": "input_audio_buffer.commit", "event_id": "evt_e"},
        ErrorCode.INPUT_AUDIO_BUFFER_EMPTY,
        None,
    ),
    (
        {"type": "input_audio_buffer.commit", "event_id": "evt_e", "final": "yes"},
        ErrorCode.BAD_EVENT,
        "final",
    ),
    (
        {"type": "response.cancel", "event_id": "evt_e"},
        ErrorCode.RESPONSE_NOT_ACTIVE,
        "response_id",
    ),
    (
        {"type": "response.create", "event_id": "evt_e"},
        ErrorCode.RESPONSE_CREATE_WITHOUT_INPUT,
        None,
    ),
    (
        {"type": "response.create", "event_id": "evt_e", "response": {"tools": []}},
        ErrorCode.UNSUPPORTED_NATIVE_RESPONSE_OPTIONS,
        "response.tools",
    ),
    (
        {"type": "response.create", "event_id": "evt_e", "response": "x"},
        ErrorCode.BAD_EVENT,
        "response",
    ),
    (
        {"type": "playback.ack", "event_id": "evt_e", "response_id": "resp_x"},
        ErrorCode.BAD_EVENT,
        "played_ms",
    ),
    (
        {"type": "playback.ack", "event_id": "evt_e", "response_id": "resp_x", "played_ms": 10},
        ErrorCode.PLAYBACK_ITEM_NOT_FOUND,
        "response_id",
    ),
    (
        {"type": "session.event_ack", "event_id": "evt_e", "server_event_seq": 999},
        ErrorCode.INVALID_EVENT_ACK,
        "server_event_seq",
    ),
    (
        {"type": "session.event_ack", "event_id": "evt_e", "server_event_seq": "1"},
        ErrorCode.INVALID_EVENT_ACK,  # vLLM-Omni 0.30.0 serving.py: not bad_event
        "server_event_seq",
    ),
    (
        {"type": "session.event_ack", "event_id": "evt_e", "server_event_seq": -1},
        ErrorCode.INVALID_EVENT_ACK,
        "server_event_seq",
    ),
    (
        {"type": "session.resume", "event_id": "evt_e", "session_id": "x", "resume_token": "y"},
        ErrorCode.UNSUPPORTED_SESSION_RESUME,
        "type",
    ),
    (
        {"type": "input.text.append", "event_id": "evt_e", "text": "hi"},
        ErrorCode.NATIVE_TEXT_APPEND_UNSUPPORTED,
        "text",
    ),
    (
        {"type": "conversation.item.retrieve", "event_id": "evt_e"},
        ErrorCode.MISSING_ITEM_ID,
        "item_id",
    ),
    (
        {"type": "conversation.item.delete", "event_id": "evt_e", "item_id": "item_nope"},
        ErrorCode.ITEM_NOT_FOUND,
        "item_id",
    ),
    # `barge_in` with nothing to interrupt drops pending input as upstream does
    # (test_upstream_commands.py), so it is no longer an error here
    (
        {"type": "session.update", "event_id": "evt_e", "session": {"overlap_policy": "shout"}},
        ErrorCode.BAD_EVENT,
        "overlap_policy",
    ),
]


@pytest.mark.parametrize(
    ("event", "code", "param"), CASES, ids=[f"{c[1]}-{i}" for i, c in enumerate(CASES)]
)
async def test_request_local_error(
    server, event: dict[str, Any], code: str, param: str | None
) -> None:
    wire = await Wire.connect(server.url)
    await wire.open()
    await wire.send(event)
    err = await wire.error(code)
    body = err["error"]
    assert body["event_id"] == "evt_e"
    assert body.get("param") == param
    assert body["type"] in ("invalid_request_error", "server_error", "rate_limit_error")
    if code in (ErrorCode.INVALID_EVENT_ACK, ErrorCode.UNSUPPORTED_SESSION_RESUME):
        assert "server_event_seq" not in err  # envelope errors are not journaled
    else:
        assert "server_event_seq" in err
    await _alive(wire)
    assert server.appends() == []  # a rejected append is not retained
    await wire.close()


async def test_envelope_errors_do_not_close(make_server: MakeServer) -> None:
    server = await make_server(limits=Limits(max_inbound_frame_bytes=64 * 1024))
    wire = await Wire.connect(server.url)
    await wire.open()
    await wire.send(append(silence(3000), event_id="evt_big"))  # ~128 KB of JSON
    err = await wire.error(ErrorCode.EVENT_TOO_LARGE)
    assert "server_event_seq" not in err
    await wire.send("{not json")
    await wire.error(ErrorCode.INVALID_JSON)
    await wire.send(b"\x00\x01")
    await wire.error(ErrorCode.BAD_EVENT)
    await _alive(wire)
    assert server.appends() == []
    await wire.close()


async def test_format_change_after_first_append(server) -> None:
    wire = await Wire.connect(server.url)
    await wire.open()
    await wire.send(
        {
            "type": "session.update",
            "event_id": "evt_u0",
            "session": {"sample_rate_hz": 24000, "audio": {"input": {"sample_rate_hz": 24000}}},
        }
    )
    updated = (await wire.until("session.updated"))[-1]
    assert updated["session"]["sample_rate_hz"] == 24000
    await wire.send(append(silence(100, 24000), event_id="evt_a"))
    await wire.send(
        {
            "type": "session.update",
            "event_id": "evt_u",
            "session": {"sample_rate_hz": 16000, "audio": {"input": {"sample_rate_hz": 16000}}},
        }
    )
    err = await wire.error(ErrorCode.UNSUPPORTED_AUDIO_FORMAT)
    assert err["error"]["event_id"] == "evt_u"
    for key, value in (("voice", "alloy"), ("instructions", "x")):
        await wire.send(
            {"type": "session.update", "event_id": f"evt_{key}", "session": {key: value}}
        )
        code = (
            ErrorCode.VOICE_UPDATE_AFTER_AUDIO_UNSUPPORTED
            if key == "voice"
            else ErrorCode.INSTRUCTIONS_UPDATE_UNSUPPORTED
        )
        await wire.error(code)
    await _alive(wire)
    await wire.close()


async def test_response_already_active(make_server: MakeServer) -> None:
    script = Script.from_dict(
        {
            "chunk_interval_ms": 2000,
            "defaults": {
                "commit": {"do": "speak", "text": "one two three four five six seven eight"}
            },
        }
    )
    server = await make_server(script=script)
    wire = await Wire.connect(server.url)
    await wire.open()
    await wire.send(append(tone(400), event_id="evt_a"))
    await wire.send({"type": "input_audio_buffer.commit", "event_id": "evt_c"})
    created = (await wire.until("response.created"))[-1]
    await wire.send(append(tone(400), event_id="evt_a2"))
    await wire.send({"type": "response.create", "event_id": "evt_r"})
    err = await wire.error(ErrorCode.RESPONSE_ALREADY_ACTIVE)
    assert err["error"]["event_id"] == "evt_r"
    await wire.send({"type": "response.cancel", "event_id": "evt_x", "response_id": "resp_other"})
    await wire.error(ErrorCode.RESPONSE_NOT_ACTIVE)
    await wire.send({"type": "response.cancel", "event_id": "evt_cancel"})
    events = await wire.until("response.done")
    done = events[-1]
    assert done["response_id"] == created["response_id"]
    assert done["response"]["status"] == "cancelled"
    assert done["response"]["status_details"]["reason"] == "client_cancelled"
    await wire.close()


async def test_playback_item_mismatch(server) -> None:
    wire = await Wire.connect(server.url)
    await wire.open()
    await wire.send(append(tone(300), event_id="evt_a"))
    await wire.send({"type": "input_audio_buffer.commit", "event_id": "evt_c"})
    done = (await wire.until("response.done"))[-1]
    rid = done["response_id"]
    await wire.send(
        {
            "type": "playback.ack",
            "event_id": "evt_p",
            "response_id": rid,
            "item_id": "item_other",
            "played_ms": 5,
        }
    )
    err = await wire.error(ErrorCode.PLAYBACK_ITEM_MISMATCH)
    assert err["error"]["param"] == "item_id"
    await wire.close()


async def test_commands_after_close_get_session_closed_or_nothing(server) -> None:
    wire = await Wire.connect(server.url)
    await wire.open()
    await wire.send({"type": "session.close", "event_id": "evt_close"})
    await wire.send({"type": "input_audio_buffer.commit", "event_id": "evt_late"})
    code, events = await wire.closed()
    assert code == 1000
    assert events[-1]["type"] == "session.closed"
    assert events[-1]["reason"] == "client_close"


async def test_frame_size_limit(make_server: MakeServer) -> None:
    server = await make_server(limits=Limits(max_frame_b64_chars=200))
    wire = await Wire.connect(server.url)
    created, _ = await wire.open()
    assert created["session"]["capabilities"]["max_frame_b64_chars"] == 200
    await wire.send(append(event_id="evt_e", frames=[b64(PNG + bytes(400))]))
    err = await wire.error(ErrorCode.INVALID_VIDEO_FRAMES)
    assert err["error"]["event_id"] == "evt_e"
    await wire.send(append(event_id="evt_ok", frames=[b64(PNG)]))
    await wire.until("response.listen")
    await wire.close()
