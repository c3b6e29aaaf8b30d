"""Conformance: handshake shape, capabilities, handshake errors, paths, auth, max sessions."""

from __future__ import annotations

import asyncio
import re

import pytest
from websockets.exceptions import InvalidStatus

from duplex_client.protocol import ErrorCode
from duplex_client.server import Limits
from tests.integration.server.conftest import MakeServer
from tests.integration.server.wire import Wire, is_handshake_error, session_update

_SESSION_OBJECT = {
    ErrorCode.UNSUPPORTED_AUDIO_FORMAT,
    ErrorCode.UNSUPPORTED_TURN_DETECTION,
    ErrorCode.BAD_EVENT,
}
SESSION_ID = re.compile(r"^duplex-[0-9a-f]{32}$")
SERVER_EVENT_ID = re.compile(r"^event_[0-9a-f]{32}$")


async def test_handshake_shape(server) -> None:
    wire = await Wire.connect(server.url)
    created, updated = await wire.open(
        session_id="duplex-ignored", ref_audio="data:audio/wav;base64,UklGRg=="
    )
    session = created["session"]
    assert SESSION_ID.match(session["id"]) and session["id"] != "duplex-ignored"
    assert SERVER_EVENT_ID.match(created["event_id"])
    assert "server_event_seq" not in created
    assert created["resume_token"].startswith("rt_")
    assert created["attachment_generation"] == 1
    assert session["object"] == "realtime.session" and session["state"] == "open"
    assert session["epoch"] == 0
    assert session["model"] == "test-model"
    assert session["sample_rate_hz"] == 16000
    assert session["audio"]["output"]["sample_rate_hz"] == 24000
    assert session["turn_detection"] is None
    assert session["playback_commit_policy"] == "commit_all_on_done"
    assert session["extra_body"]["auto_response"] is True
    assert session["playback"] == {
        "generated_ms": 0,
        "sent_ms": 0,
        "played_ms": 0,
        "committed_ms": 0,
    }
    assert "ref_audio" not in session  # never echoed
    assert updated["server_event_seq"] == 1
    assert updated["session"]["id"] == session["id"]
    assert updated["session"]["capabilities"] == session["capabilities"]
    await wire.close()


async def test_minicpmo_capabilities(server) -> None:
    wire = await Wire.connect(server.url)
    created, _ = await wire.open()
    caps = created["session"]["capabilities"]
    assert caps["implementation_level"] == "model_native_duplex"
    assert caps["chunk_period_ms"] == 1000 and caps["first_unit_ms"] == 1000
    assert caps["required_input_modalities"] == []
    assert caps["optional_input_modalities"] == ["audio", "video"]
    assert caps["input_unit_kinds"] == ["AUDIO", "VISION", "OMNI"]
    assert caps["max_frames_per_append"] == 2
    assert caps["max_frame_b64_chars"] == 4_000_000
    assert caps["supports_session_resume"] is True
    assert caps["supports_barge_in"] is True
    assert caps["supports_playback_ack"] is True
    await wire.close()


@pytest.mark.parametrize(
    ("overrides", "required", "optional", "kinds"),
    [
        ({"require_audio": True}, ["audio"], ["video"], ["AUDIO", "OMNI"]),
        ({"profile": "aura"}, ["video"], ["audio"], ["VISION", "OMNI"]),
    ],
)
async def test_profile_capabilities(
    make_server: MakeServer, overrides, required, optional, kinds
) -> None:
    server = await make_server(**overrides)
    wire = await Wire.connect(server.url)
    created, _ = await wire.open()
    caps = created["session"]["capabilities"]
    assert caps["required_input_modalities"] == required
    assert caps["optional_input_modalities"] == optional
    assert caps["input_unit_kinds"] == kinds
    await wire.close()


async def test_first_unit_ms_is_advertised(make_server: MakeServer) -> None:
    server = await make_server(first_unit_ms=1030)
    wire = await Wire.connect(server.url)
    created, _ = await wire.open()
    assert created["session"]["capabilities"]["first_unit_ms"] == 1030
    await wire.close()


@pytest.mark.parametrize("path", ["/v1/realtime", "/v1/duplex"])
@pytest.mark.parametrize("query", ["duplex=1&autostart=0", "autostart=0", ""])
async def test_paths_and_queries(server, path: str, query: str) -> None:
    wire = await Wire.connect(f"ws://127.0.0.1:{server.port}{path}", query=query)
    await wire.open()
    await wire.close()


async def test_unknown_path_is_404(server) -> None:
    with pytest.raises(InvalidStatus) as info:
        await Wire.connect(f"ws://127.0.0.1:{server.port}/v1/other")
    assert info.value.response.status_code == 404


@pytest.mark.parametrize(
    ("first", "code"),
    [
        ("not json", ErrorCode.INVALID_JSON),
        ("[1, 2]", ErrorCode.BAD_EVENT),
        (b"\x01\x02", ErrorCode.BAD_EVENT),
    ],
)
async def test_wrong_first_message_ends_the_socket(server, first, code: str) -> None:
    """Nested, unsequenced, then a normal close: vLLM-Omni 0.30.0's handler returns."""
    wire = await Wire.connect(server.url)
    await wire.send(first)
    err = await wire.error(code)
    assert is_handshake_error(err, code)
    assert err["error"]["type"] == "invalid_request_error"
    close_code, rest = await wire.closed()
    assert close_code == 1000 and rest == []
    assert server.session_ids() == []


async def test_first_message_timeout(make_server: MakeServer) -> None:
    server = await make_server(limits=Limits(first_message_timeout_s=0.2))
    wire = await Wire.connect(server.url)
    err = await wire.error(ErrorCode.CONFIG_TIMEOUT)
    assert is_handshake_error(err, ErrorCode.CONFIG_TIMEOUT)
    close_code, _ = await wire.closed()
    assert close_code == 1000


@pytest.mark.parametrize(
    ("session", "code", "param"),
    [
        ({"input_audio_format": "mp3"}, ErrorCode.UNSUPPORTED_AUDIO_FORMAT, "input_audio_format"),
        ({"sample_rate_hz": 12345}, ErrorCode.UNSUPPORTED_AUDIO_FORMAT, "sample_rate_hz"),
        (
            {"output_audio_format": "opus"},
            ErrorCode.UNSUPPORTED_AUDIO_FORMAT,
            "output_audio_format",
        ),
        (
            {"turn_detection": {"type": "semantic_vad"}},
            ErrorCode.UNSUPPORTED_TURN_DETECTION,
            "turn_detection",
        ),
        (
            {"turn_detection": {"type": "server_vad", "interrupt_response": False}},
            ErrorCode.UNSUPPORTED_TURN_DETECTION,
            "turn_detection",
        ),
        (
            {"turn_detection": {"type": "server_vad", "interrupt_response": True}},
            ErrorCode.SERVER_VAD_UNAVAILABLE,
            "turn_detection",
        ),
        ({"ref_audio": "/home/me/voice.wav"}, ErrorCode.UNSUPPORTED_REF_AUDIO_PATH, "ref_audio"),
        ({"ref_audio": "https://x/voice.wav"}, ErrorCode.UNSUPPORTED_REF_AUDIO_PATH, "ref_audio"),
        (
            {
                "extra_body": {
                    "sliding_window_mode": "basic",
                    "basic_window_high_tokens": 10,
                    "basic_window_low_tokens": 20,
                }
            },
            ErrorCode.INVALID_DUPLEX_RUNTIME_CONFIG,
            "extra_body.basic_window_low_tokens",
        ),
        (
            {"extra_body": {"context_max_units": 0}},
            ErrorCode.INVALID_DUPLEX_RUNTIME_CONFIG,
            "extra_body.context_max_units",
        ),
        (
            {"extra_body": {"auto_response": "yes"}},
            ErrorCode.INVALID_DUPLEX_RUNTIME_CONFIG,
            "extra_body.auto_response",
        ),
        (
            {"extra_body": {"sliding_window_mode": "huge"}},
            ErrorCode.INVALID_DUPLEX_RUNTIME_CONFIG,
            "extra_body.sliding_window_mode",
        ),
        ({"modalities": ["video"]}, ErrorCode.BAD_EVENT, "modalities"),
    ],
)
async def test_handshake_validation_errors(server, session, code: str, param: str) -> None:
    wire = await Wire.connect(server.url)
    await wire.send(session_update(**session))
    # the session object's own faults are `invalid_session_config` at open, as vLLM-Omni
    # 0.30.0's handler answers them (the field's code stays in the message); a model
    # plugin's refusals keep their code. Nested; `param` names the field.
    wanted = ErrorCode.INVALID_SESSION_CONFIG if code in _SESSION_OBJECT else code
    err = await wire.error(wanted)
    assert is_handshake_error(err, wanted) and err["error"]["param"] == param
    if wanted != code:
        assert err["error"]["message"].startswith(code)
    close_code, _ = await wire.closed()
    assert close_code == 1000
    assert server.session_ids() == []


async def test_session_must_be_an_object(server) -> None:
    wire = await Wire.connect(server.url)
    await wire.send({"type": "session.update", "event_id": "evt_1", "session": "nope"})
    err = await wire.error(ErrorCode.INVALID_SESSION_CONFIG)
    assert is_handshake_error(err, ErrorCode.INVALID_SESSION_CONFIG)
    assert err["error"]["param"] == "session"


async def test_ref_audio_required_when_configured(make_server: MakeServer) -> None:
    server = await make_server(require_ref_audio=True)
    wire = await Wire.connect(server.url)
    await wire.send(session_update())
    await wire.error(ErrorCode.REF_AUDIO_REQUIRED)
    wire2 = await Wire.connect(server.url)
    await wire2.open(ref_audio="data:audio/wav;base64,UklGRg==")
    await wire2.close()


async def test_accepted_input_formats_and_knobs(server) -> None:
    wire = await Wire.connect(server.url)
    created, _ = await wire.open(
        input_audio_format={"type": "audio/pcm", "rate": 16000},
        audio={"input": {"sample_rate_hz": 16000, "turn_detection": None}},
        extra_body={"minicpmo45_native_duplex": True, "force_listen_count": 2, "custom": 1},
        tracing="auto",
    )
    session = created["session"]
    assert session["input_audio_format"] == "pcm16"
    assert session["extra_body"]["native_duplex"] is True
    assert session["extra_body"]["force_listen_count"] == 2
    assert session["extra_body"]["custom"] == 1
    assert session["extra_body"]["sliding_window_mode"] == "off"
    assert session["tracing"] == "auto"
    await wire.close()


async def test_pcm_f32le_input_is_accepted(server) -> None:
    wire = await Wire.connect(server.url)
    created, _ = await wire.open(input_audio_format="pcm_f32le")
    assert created["session"]["input_audio_format"] == "pcm_f32le"
    await wire.close()


async def test_api_key(make_server: MakeServer) -> None:
    server = await make_server(api_key="s3cret")
    for headers in (None, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic s3cret"}):
        with pytest.raises(InvalidStatus) as info:
            await Wire.connect(server.url, headers=headers)
        assert info.value.response.status_code == 401
    wire = await Wire.connect(server.url, headers={"Authorization": "Bearer s3cret"})
    await wire.open()
    await wire.close()


async def _http_get(port: int, path: str) -> tuple[int, bytes]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode())
    await writer.drain()
    data = await asyncio.wait_for(reader.read(), 10)
    writer.close()
    status = int(data.split(b" ", 2)[1])
    return status, data.split(b"\r\n\r\n", 1)[1]


async def test_health_needs_no_key(make_server: MakeServer) -> None:
    server = await make_server(api_key="s3cret")
    status, body = await _http_get(server.port, "/health")
    assert status == 200 and body.strip() == b"ok"


async def test_max_sessions(make_server: MakeServer) -> None:
    server = await make_server(limits=Limits(max_sessions=1))
    first = await Wire.connect(server.url)
    await first.open()
    second = await Wire.connect(server.url)
    await second.send(session_update())
    err = await second.error(ErrorCode.RESOURCE_EXHAUSTED)
    assert is_handshake_error(err, ErrorCode.RESOURCE_EXHAUSTED)
    assert err["error"]["type"] == "rate_limit_error"
    await second.closed()
    # the first session is unaffected
    await first.send({"type": "session.heartbeat", "event_id": "evt_hb"})
    ack = await first.until("session.heartbeat_ack")
    assert ack[-1]["session_id"] == first.received[0]["session"]["id"]
    await first.send({"type": "session.close", "event_id": "evt_c"})
    code, events = await first.closed()
    assert code == 1000 and events[-1]["type"] == "session.closed"
    third = await Wire.connect(server.url)
    await third.open()
    await third.close()


async def test_later_update_and_request_local_errors(server) -> None:
    wire = await Wire.connect(server.url)
    await wire.open()
    await wire.send(
        {"type": "session.update", "event_id": "evt_u1", "session": {"instructions": "Be brief."}}
    )
    updated = (await wire.until("session.updated"))[-1]
    assert updated["session"]["instructions"] == "Be brief."
    await wire.send({"type": "session.update", "event_id": "evt_u2", "session": {"model": "other"}})
    err = await wire.error(ErrorCode.MODEL_UPDATE_UNSUPPORTED)
    assert err["error"]["event_id"] == "evt_u2"
    await wire.send(
        {
            "type": "session.update",
            "event_id": "evt_u3",
            "session": {"turn_detection": {"type": "server_vad", "interrupt_response": True}},
        }
    )
    await wire.error(ErrorCode.SERVER_VAD_UNAVAILABLE)
    await wire.send(
        {
            "type": "session.update",
            "event_id": "evt_u4",
            "session": {"ref_audio": "data:audio/wav;base64,UklGRg=="},
        }
    )
    await wire.until("session.updated")
    await wire.send(
        {
            "type": "session.update",
            "event_id": "evt_u5",
            "session": {"ref_audio": "data:audio/wav;base64,AAAA"},
        }
    )
    await wire.error(ErrorCode.REF_AUDIO_UPDATE_UNSUPPORTED)
    # the session continues
    await wire.send({"type": "session.heartbeat"})
    await wire.until("session.heartbeat_ack")
    await wire.close()
