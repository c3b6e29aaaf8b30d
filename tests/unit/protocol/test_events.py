"""Server event decoding: every known type, both name generations, unknown events, errors."""

from __future__ import annotations

import json

import pytest

from duplex_client.protocol import (
    GA_TO_BETA,
    SERVER_EVENT_TYPES,
    Capabilities,
    CodecError,
    ConversationItemAdded,
    DuplexPassthrough,
    ErrorEvent,
    InputAudioBufferCommitted,
    ResponseAudioDelta,
    ResponseAudioTranscriptDelta,
    ResponseDone,
    ResponseListen,
    ResponseTextDelta,
    SessionCreated,
    UnitKind,
    UnknownEvent,
    b64encode,
    decode_server_event,
    parse_server_event,
)
from duplex_client.protocol.errors import DuplexProtocolError, ErrorCode, ErrorInfo


@pytest.mark.parametrize(("ga", "beta"), sorted(GA_TO_BETA.items()))
def test_both_name_generations_decode_to_the_same_type(ga: str, beta: str) -> None:
    raw = {"response_id": "resp_1", "delta": "AAA=", "transcript": "t", "text": "x"}
    a = parse_server_event({"type": ga, **raw})
    b = parse_server_event({"type": beta, **raw})
    assert type(a) is type(b)
    assert not isinstance(a, UnknownEvent)
    assert a.type == ga and b.type == beta


def test_audio_delta_fields_and_pcm() -> None:
    pcm = bytes(range(10))
    event = decode_server_event(
        json.dumps(
            {
                "type": "response.audio.delta",
                "server_event_seq": 7,
                "response_id": "resp_a",
                "delta": b64encode(pcm),
                "sample_rate_hz": 24000,
                "metadata": {"unit_index": 4, "unit_kind": "AUDIO", "audio_unit_index": 2},
            }
        )
    )
    assert isinstance(event, ResponseAudioDelta)
    assert event.pcm() == pcm
    assert event.server_event_seq == 7
    assert (event.unit_index, event.unit_kind, event.audio_unit_index) == (4, "AUDIO", 2)


def test_ill_typed_fields_fall_back_to_defaults_instead_of_raising() -> None:
    event = parse_server_event(
        {"type": "response.output_audio.delta", "response_id": 5, "server_event_seq": "x"}
    )
    assert isinstance(event, ResponseAudioDelta)
    assert event.response_id is None and event.server_event_seq is None
    # booleans are not integers
    assert (
        parse_server_event({"type": "session.closed", "server_event_seq": True}).server_event_seq
        is None
    )


def test_unknown_event_keeps_raw_dict() -> None:
    raw = {"type": "vendor.something_new", "payload": {"a": [1, 2]}}
    event = parse_server_event(raw)
    assert isinstance(event, UnknownEvent)
    assert event.raw == raw and event.type == "vendor.something_new"
    assert isinstance(parse_server_event({"no_type": 1}), UnknownEvent)


def test_duplex_passthrough_events_are_read_whatever_their_name() -> None:
    """vLLM-Omni 0.30.0 `DuplexRawEvent`: `{type: "duplex.<internal type>", event}`."""
    raw = {"type": "duplex.something_new", "event_id": "e1", "event": {"type": "something_new"}}
    event = parse_server_event(raw)
    assert isinstance(event, DuplexPassthrough)
    assert event.internal_type == "something_new" and event.event == {"type": "something_new"}
    assert event.raw == raw
    assert isinstance(parse_server_event({"type": "duplex.x", "event": "junk"}), DuplexPassthrough)


def test_every_registered_type_decodes_from_a_minimal_object() -> None:
    for name, cls in SERVER_EVENT_TYPES.items():
        event = parse_server_event({"type": name})
        assert isinstance(event, cls), name


def test_non_object_frames_raise_codec_error() -> None:
    with pytest.raises(CodecError):
        decode_server_event("[1, 2]")
    with pytest.raises(CodecError):
        decode_server_event("{not json")


def test_nested_and_flat_error_envelopes() -> None:
    nested = parse_server_event(
        {
            "type": "error",
            "error": {
                "type": "invalid_request_error",
                "code": "invalid_video_frames",
                "message": "video_frames[1] is not a JPEG or PNG image",
                "param": "video_frames",
                "event_id": "evt_5b",
            },
        }
    )
    assert isinstance(nested, ErrorEvent)
    assert nested.code == ErrorCode.INVALID_VIDEO_FRAMES
    assert nested.error.param == "video_frames" and nested.error.event_id == "evt_5b"
    flat = parse_server_event({"type": "error", "error": "boom", "code": "bad_event"})
    assert isinstance(flat, ErrorEvent)
    assert flat.error == ErrorInfo(code="bad_event", message="boom")
    odd = ErrorInfo.from_event({"type": "error", "error": {"type": "weird", "code": "x"}})
    assert odd.type == "invalid_request_error"


def test_protocol_error_carries_code_event_id_and_raw() -> None:
    raw = {"type": "error", "error": {"code": "bad_audio", "message": "m", "event_id": "evt_1"}}
    event = parse_server_event(raw)
    assert isinstance(event, ErrorEvent)
    exc = DuplexProtocolError.from_error(event.error, raw)
    assert (exc.code, exc.event_id, exc.raw) == ("bad_audio", "evt_1", raw)
    assert "bad_audio" in str(exc)


def test_committed_reads_ids_from_event_object_too() -> None:
    event = parse_server_event(
        {
            "type": "input_audio_buffer.committed",
            "audio_end_ms": 2400,
            "event": {"type": "input.committed", "client_event_id": "evt_c1", "no_response": True},
        }
    )
    assert isinstance(event, InputAudioBufferCommitted)
    assert event.client_event_id == "evt_c1" and event.no_response is True
    assert event.audio_end_ms == 2400 and event.final is True


def test_response_done_status_and_reason_and_id_from_response_object() -> None:
    event = parse_server_event(
        {
            "type": "response.done",
            "response": {
                "id": "resp_9",
                "status": "cancelled",
                "status_details": {"type": "cancelled", "reason": "barge_in"},
            },
        }
    )
    assert isinstance(event, ResponseDone)
    assert (event.response_id, event.status, event.reason) == ("resp_9", "cancelled", "barge_in")


def test_listen_without_top_level_id_is_standalone() -> None:
    event = parse_server_event(
        {
            "type": "response.listen",
            "response": {
                "id": "ignored",
                "metadata": {"reason": "model_listen", "unit_kind": "VISION"},
            },
        }
    )
    assert isinstance(event, ResponseListen)
    assert event.response_id is None
    assert event.reason == "model_listen" and event.unit_kind == "VISION"


def test_item_added_alias_and_text_events() -> None:
    assert isinstance(
        parse_server_event({"type": "conversation.item.created"}), ConversationItemAdded
    )
    delta = parse_server_event({"type": "response.text.delta", "delta": "hi", "response_id": "r"})
    assert isinstance(delta, ResponseTextDelta) and delta.delta == "hi"
    td = parse_server_event({"type": "response.audio_transcript.delta", "delta": "yo"})
    assert isinstance(td, ResponseAudioTranscriptDelta) and td.delta == "yo"


def test_session_created_id_fallbacks_and_capabilities() -> None:
    caps = {
        "chunk_period_ms": 500,
        "required_input_modalities": [],
        "optional_input_modalities": ["audio", "video"],
    }
    a = parse_server_event(
        {"type": "session.created", "session": {"id": "duplex-1", "capabilities": caps}}
    )
    assert isinstance(a, SessionCreated) and a.session_id == "duplex-1"
    assert a.capabilities is not None and a.capabilities.chunk_period_ms == 500
    b = parse_server_event({"type": "session.created", "session": {"session_id": "duplex-2"}})
    assert isinstance(b, SessionCreated) and b.session_id == "duplex-2" and b.capabilities is None
    c = parse_server_event({"type": "session.created", "session_id": "duplex-3", "session": {}})
    assert isinstance(c, SessionCreated) and c.session_id == "duplex-3"
    assert "rt_" not in repr(
        parse_server_event({"type": "session.created", "resume_token": "rt_x"})
    )


def test_capabilities_defaults_validation_and_derivation() -> None:
    d = Capabilities.from_dict({})
    assert (d.chunk_period_ms, d.first_unit_ms, d.max_frames_per_append) == (1000, 1000, 2)
    assert d.required_input_modalities == ("audio",) and d.audio_required
    assert d.input_unit_kinds == {UnitKind.AUDIO, UnitKind.OMNI}
    bad = Capabilities.from_dict(
        {"chunk_period_ms": True, "first_unit_ms": -5, "max_frame_b64_chars": 1.5}
    )
    assert (bad.chunk_period_ms, bad.first_unit_ms, bad.max_frame_b64_chars) == (
        1000,
        1000,
        4_000_000,
    )
    minicpm = Capabilities.from_dict(
        {
            "required_input_modalities": [],
            "optional_input_modalities": ["audio", "video"],
            "first_unit_ms": 1030,
            "supports_playback_ack": True,
        }
    )
    assert minicpm.input_unit_kinds == {UnitKind.AUDIO, UnitKind.VISION, UnitKind.OMNI}
    assert (
        minicpm.first_unit_ms == 1030
        and minicpm.supports_playback_ack
        and not minicpm.audio_required
    )
    aura = Capabilities.from_dict(
        {"required_input_modalities": ["video"], "optional_input_modalities": ["audio"]}
    )
    assert aura.input_unit_kinds == {UnitKind.VISION, UnitKind.OMNI} and aura.video_required
    explicit = Capabilities.from_dict({"input_unit_kinds": ["AUDIO", "bogus"]})
    assert explicit.input_unit_kinds == {UnitKind.AUDIO}
    assert Capabilities.from_dict(minicpm.to_dict()) == minicpm
