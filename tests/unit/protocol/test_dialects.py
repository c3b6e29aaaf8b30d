"""The OpenAI Realtime (GA) mapping, sans-I/O: duplex events to the GA wire and back."""

from __future__ import annotations

from duplex_client.client.config import SessionConfig
from duplex_client.protocol.capabilities import Capabilities
from duplex_client.protocol.dialects import client_mapping, server_mapping
from duplex_client.protocol.dialects.openai import OpenAIClientMapping, OpenAIServerMapping


def _client() -> OpenAIClientMapping:
    mapping = client_mapping("openai", grid_ms=1000)
    assert isinstance(mapping, OpenAIClientMapping)
    return mapping


def test_duplex_is_no_mapping() -> None:
    assert client_mapping("duplex", grid_ms=1000) is None and server_mapping("duplex") is None


def test_the_session_update_becomes_a_ga_session_at_24_khz() -> None:
    m = _client()
    update = {"type": "session.update", "event_id": "evt_1"}
    config = SessionConfig(input_sample_rate_hz=24000, instructions="be brief", voice="alloy")
    (out,) = m.outgoing({**update, "session": config.to_session("gpt-realtime")})
    session = out["session"]
    assert out["event_id"] == "evt_1" and session["type"] == "realtime"
    assert session["audio"]["input"]["format"] == {"type": "audio/pcm", "rate": 24000}
    assert session["audio"]["output"] == {
        "format": {"type": "audio/pcm", "rate": 24000},
        "voice": "alloy",
    }
    # the model answers by itself in the duplex auto lane: server VAD creates the responses
    assert session["audio"]["input"]["turn_detection"] == {
        "type": "server_vad",
        "create_response": True,
    }
    assert session["instructions"] == "be brief" and "extra_body" not in session
    manual = SessionConfig(extra_body={"auto_response": False}).to_session(None)
    (out,) = m.outgoing({**update, "session": manual})
    assert out["session"]["audio"]["input"]["turn_detection"] is None


def test_appends_are_plain_and_duplex_only_events_are_not_sent() -> None:
    m = _client()
    append = {
        "type": "input_audio_buffer.append",
        "event_id": "evt_a",
        "audio": "AAAA",
        "is_speech": True,
        "duration_ms": 200,
        "audio_end_ms": 200,
        "video_frames": ["x"],
    }
    assert m.outgoing(append) == [
        {"type": "input_audio_buffer.append", "event_id": "evt_a", "audio": "AAAA"}
    ]
    assert m.outgoing({"type": "input_audio_buffer.append", "video_frames": ["x"]}) == []
    for etype in ("session.heartbeat", "session.event_ack", "session.close"):
        assert m.outgoing({"type": etype}) == []
    assert m.outgoing({"type": "playback.ack", "response_id": "r", "played_ms": 5}) == []
    assert m.unsent["playback.ack"] == 1 and m.unsent["session.close"] == 1
    assert m.outgoing({"type": "barge_in", "event_id": "evt_b"}) == [
        {"type": "response.cancel", "event_id": "evt_b"}
    ]


def test_a_truncating_ack_is_a_truncate_at_the_heard_position() -> None:
    m = _client()
    m.incoming(
        {"type": "response.output_item.added", "response_id": "resp_1", "item": {"id": "item_9"}}
    )
    ack = {
        "type": "playback.ack",
        "event_id": "evt_p",
        "response_id": "resp_1",
        "played_ms": 1234,
        "truncate": True,
    }
    assert m.outgoing(ack) == [
        {
            "type": "conversation.item.truncate",
            "event_id": "evt_p",
            "item_id": "item_9",
            "content_index": 0,
            "audio_end_ms": 1234,
        }
    ]


def test_the_handshake_ends_at_session_updated_with_synthesised_capabilities() -> None:
    m = _client()
    created = {"type": "session.created", "session": {"id": "sess_1", "model": "gpt-realtime"}}
    assert m.incoming(created) == [] and m.incoming({"type": "conversation.created"}) == []
    m.outgoing({"type": "session.update", "session": SessionConfig().to_session("gpt-realtime")})
    td = {"type": "server_vad", "create_response": True}
    updated = {
        "type": "session.updated",
        "session": {"id": "sess_1", "audio": {"input": {"turn_detection": td}}},
    }
    (duplex,) = m.incoming(updated)
    assert duplex["type"] == "session.created" and duplex["session"]["id"] == "sess_1"
    assert duplex["session"]["dialect"] == "openai" and duplex["session"]["sample_rate_hz"] == 24000
    caps = Capabilities.from_dict(duplex["session"]["capabilities"])
    assert caps.implementation_level == "dialect_openai" and caps.chunk_period_ms == 1000
    assert not caps.supports_client_commit and not caps.supports_session_resume
    # later updates pass; a response started is a speak; deltas say their rate
    assert m.incoming(updated) == [updated]
    started = {"type": "response.created", "response": {"id": "resp_1"}}
    assert m.incoming(started) == [
        started,
        {"type": "response.speak", "response_id": "resp_1", "synthesised": True},
    ]
    (delta,) = m.incoming(
        {"type": "response.output_audio.delta", "response_id": "resp_1", "delta": ""}
    )
    assert delta["sample_rate_hz"] == 24000 and delta["format"] == "pcm16"
    assert m.closing("client_close")[0]["type"] == "session.closed"


def test_the_server_side_speaks_ga() -> None:
    m = server_mapping("openai")
    assert isinstance(m, OpenAIServerMapping)
    opening = m.opening("test-model")["session"]
    assert opening["sample_rate_hz"] == 24000 and opening["model"] == "test-model"
    created = {
        "type": "session.created",
        "event_id": "e1",
        "resume_token": "rt_x",
        "session": {"id": "duplex-1", "model": "m", "capabilities": {}},
    }
    first, conversation = m.outgoing(created)
    assert first["type"] == "session.created" and first["session"]["type"] == "realtime"
    assert "capabilities" not in first["session"] and "resume_token" not in first
    assert conversation["type"] == "conversation.created"
    assert m.outgoing({"type": "session.updated", "server_event_seq": 1, "session": {}}) == []
    for etype in ("response.speak", "response.listen", "session.heartbeat_ack", "session.closed"):
        assert m.outgoing({"type": etype, "server_event_seq": 3}) == []
    delta = {
        "type": "response.output_audio.delta",
        "server_event_seq": 4,
        "response_id": "r",
        "item_id": "item_r",
        "delta": "AA",
        "format": "pcm16",
        "sample_rate_hz": 24000,
        "metadata": {"x": 1},
    }
    assert m.outgoing(delta) == [
        {
            "type": "response.output_audio.delta",
            "response_id": "r",
            "item_id": "item_r",
            "delta": "AA",
        }
    ]
    (err,) = m.outgoing(
        {
            "type": "error",
            "error": {"type": "invalid_request_error", "code": "bad_event", "message": "m"},
        }
    )
    assert err["error"]["code"] == "invalid_event"
    # the truncate is a truncating ack at the heard position
    (ack,) = m.incoming(
        {
            "type": "conversation.item.truncate",
            "event_id": "evt_t",
            "item_id": "item_r",
            "content_index": 0,
            "audio_end_ms": 700,
        }
    )
    assert ack == {
        "type": "playback.ack",
        "event_id": "evt_t",
        "response_id": "r",
        "item_id": "item_r",
        "played_ms": 700,
        "committed_ms": 700,
        "truncate": True,
    }
    acked = {
        "type": "playback.acknowledged",
        "item_id": "item_r",
        "committed_ms": 700,
        "truncate": True,
    }
    assert m.outgoing(acked)[0] == {
        "type": "conversation.item.truncated",
        "event_id": None,
        "item_id": "item_r",
        "content_index": 0,
        "audio_end_ms": 700,
    }


def test_gpt_live_is_one_continuous_stream() -> None:
    m = client_mapping("gpt-live", grid_ms=1000)
    assert m is not None
    config = SessionConfig(input_sample_rate_hz=24000, instructions="hi", voice="marin")
    (start,) = m.outgoing({"type": "session.update", "session": config.to_session("gpt-live-1")})
    assert start == {
        "type": "session.start",
        "session": {
            "model": "gpt-live-1",
            "instructions": "hi",
            "audio": {"output": {"voice": "marin"}},
        },
    }
    append = {
        "type": "input_audio_buffer.append",
        "event_id": "evt_a",
        "audio": "AAAA",
        "is_speech": True,
    }
    assert m.outgoing(append) == [
        {"type": "session.input_audio.append", "event_id": "evt_a", "audio": "AAAA"}
    ]
    for etype in ("input_audio_buffer.commit", "response.create", "playback.ack", "session.close"):
        assert m.outgoing({"type": etype}) == []
    (created,) = m.incoming({"type": "session.started", "session": {"id": "live_1"}})
    caps = Capabilities.from_dict(created["session"]["capabilities"])
    assert caps.implementation_level == "dialect_gpt-live"
    assert caps.response_lifecycle == "continuous_stream" and not caps.supports_playback_ack
    first = m.incoming({"type": "session.output_audio.delta", "delta": "AA"})
    assert [e["type"] for e in first] == [
        "response.created",
        "response.speak",
        "response.output_audio.delta",
    ]
    assert first[-1]["sample_rate_hz"] == 24000
    (more,) = m.incoming({"type": "session.output_audio.delta", "delta": "BB"})
    assert more["response_id"] == first[-1]["response_id"]
    done, closed = m.incoming({"type": "session.closed", "reason": "client_close"})
    assert done["response"]["status_details"]["reason"] == "stream_drained"
    assert closed == {"type": "session.closed", "reason": "client_close", "synthesised": True}
    assert m.closing("client_close") == []


def test_gpt_live_server_side() -> None:
    m = server_mapping("gpt-live")
    assert m is not None and not m.speaks_first
    (update,) = m.incoming(
        {"type": "session.start", "session": {"model": "x", "audio": {"output": {"voice": "v"}}}}
    )
    assert update["type"] == "session.update" and update["session"]["sample_rate_hz"] == 24000
    assert update["session"]["voice"] == "v"
    assert m.incoming({"type": "session.input_audio.mute", "event_id": "evt_m"}) == []
    assert m.replies() == [{"type": "session.input_audio.muted", "client_event_id": "evt_m"}]
    (append,) = m.incoming({"type": "session.input_audio.append", "audio": "AQIDBA=="})
    assert append["audio"] == "AAAAAA=="  # muted: silence of the same length
    assert m.incoming({"type": "response.create", "event_id": "evt_r"}) == []
    (err,) = m.replies()
    assert err["error"]["code"] == "invalid_event" and err["error"]["client_event_id"] == "evt_r"
    assert (
        m.outgoing({"type": "response.speak"}) == [] and m.outgoing({"type": "response.done"}) == []
    )
    assert m.outgoing(
        {"type": "response.output_audio.delta", "delta": "AA", "response_id": "r"}
    ) == [{"type": "session.output_audio.delta", "delta": "AA"}]


def test_each_dialect_has_its_url() -> None:
    from duplex_client.client.transport import build_url

    assert build_url("http://h:1", "m", dialect="openai") == "ws://h:1/v1/realtime?model=m"
    assert build_url("https://h", "m", dialect="gpt-live") == "wss://h/v1/live/sessions"
    assert build_url("ws://h/x?k=v", "m", dialect="gpt-live") == "ws://h/x?k=v"


def test_detection_reads_only_what_the_wire_shows() -> None:
    from duplex_client.protocol.dialects.detect import from_first_frame, from_path

    assert from_path("ws://h:1/v1/live/sessions").dialect == "gpt-live"  # type: ignore[union-attr]
    assert from_path("ws://h:1/v1/realtime?model=x") is None
    ga = {"type": "session.created", "session": {"type": "realtime", "audio": {}}}
    duplex = {"type": "session.created", "session": {"capabilities": {}}}
    refused = {"type": "error", "error": {"type": "invalid_request_error", "code": "bad_event"}}
    flat = {"type": "error", "error": "Realtime API is not available", "code": "unsupported"}
    live = {"type": "error", "error": {"code": "invalid_event", "message": "no"}}
    shown = [from_first_frame(e) for e in (ga, duplex, refused, flat, live)]
    assert [d.dialect if d else None for d in shown] == [
        "openai",
        "duplex",
        "duplex",
        "duplex",
        "gpt-live",
    ]
    for nothing in ([], "x", {"type": "session.created"}, {"type": "conversation.created"}):
        assert from_first_frame(nothing) is None  # no guess: the run takes duplex
