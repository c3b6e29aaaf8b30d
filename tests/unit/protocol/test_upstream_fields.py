"""The SDK decodes the fields vLLM-Omni sends (#20) into typed attributes, and tolerates them
ill-typed or absent (a server's bytes never raise)."""

from __future__ import annotations

from typing import Any

import pytest

from duplex_client.protocol import (
    Capabilities,
    ConversationItemDone,
    InputAudioBufferCommitted,
    PlaybackAcknowledged,
    RateLimitsUpdated,
    ResponseAudioDelta,
    ResponseCreated,
    ResponseDone,
    ResponseSpeak,
    SessionClosed,
    parse_server_event,
)
from duplex_client.protocol.objects import AudioTextMark, PlaybackTotals

CURSOR = {"generated_ms": 2400, "sent_ms": 2400, "played_ms": 1000, "committed_ms": 1000}


def test_session_closed_epoch_and_close_record() -> None:
    raw = {
        "type": "session.closed",
        "session_id": "sess_1",
        "epoch": 2,
        "reason": "client_close",
        "event": {"type": "session.closed", "session_id": "sess_1", "reason": "client_close"},
    }
    event = parse_server_event(raw)
    assert isinstance(event, SessionClosed)
    assert event.epoch == 2 and event.reason == "client_close"
    assert event.event["type"] == "session.closed"
    # upstream's own shape has no top-level epoch: absent reads as None
    upstream = parse_server_event({k: v for k, v in raw.items() if k != "epoch"})
    assert isinstance(upstream, SessionClosed) and upstream.epoch is None


def test_playback_acknowledged_cursor() -> None:
    raw = {
        "type": "playback.acknowledged",
        "event": {
            "type": "playback.acknowledged",
            "session_id": "sess_1",
            "epoch": 0,
            "item_id": "item_resp_1",
            "played_ms": 1000,
            "committed_ms": 1000,
            "truncate": False,
            "playback": CURSOR,
            "history_committed": False,
        },
    }
    event = parse_server_event(raw)
    assert isinstance(event, PlaybackAcknowledged)
    assert event.playback == PlaybackTotals(**CURSOR)
    assert event.history_committed is False


@pytest.mark.parametrize("name", ["response.output_audio.delta", "response.audio.delta"])
def test_audio_delta_speak_marks_and_cursor(name: str) -> None:
    raw = {
        "type": name,
        "response_id": "resp_1",
        "item_id": "item_resp_1",
        "delta": "AAA=",
        "format": "pcm16",
        "sample_rate_hz": 24000,
        "metadata": {
            "session_id": "sess_1",
            "epoch": 0,
            "model_speak": True,
            "end_of_turn": False,
            "audio_duration_ms": 1000,
            "audio_text_marks": [{"text_chars": 11, "audio_end_ms": 1000}, "junk", {"x": 1}],
            "playback": {"generated_ms": 1000, "sent_ms": 1000, "played_ms": 0},
        },
    }
    event = parse_server_event(raw)
    assert isinstance(event, ResponseAudioDelta)
    assert event.model_speak is True
    assert event.audio_text_marks == (AudioTextMark(text_chars=11, audio_end_ms=1000),)
    assert event.playback == PlaybackTotals(generated_ms=1000, sent_ms=1000)


def test_response_lifecycle_records() -> None:
    created = parse_server_event(
        {
            "type": "response.created",
            "response": {
                "id": "resp_1",
                "metadata": {"duplex_event": {"type": "response.created", "turn_id": 1}},
            },
        }
    )
    assert isinstance(created, ResponseCreated)
    assert created.response_id == "resp_1" and created.duplex_event["turn_id"] == 1
    speak = parse_server_event(
        {
            "type": "response.speak",
            "response_id": "resp_1",
            "content_index": 0,
            "metadata": {"session_id": "sess_1", "epoch": 0, "model_speak": True},
        }
    )
    assert isinstance(speak, ResponseSpeak)
    assert speak.content_index == 0 and speak.model_speak is True
    done = parse_server_event(
        {
            "type": "response.done",
            "response_id": "resp_1",
            "response": {
                "id": "resp_1",
                "status": "completed",
                "metadata": {"type": "response.done", "committed": True, "playback": CURSOR},
            },
        }
    )
    assert isinstance(done, ResponseDone)
    assert done.committed is True and done.playback == PlaybackTotals(**CURSOR)
    limits = parse_server_event({"type": "rate_limits.updated", "rate_limits": []})
    assert isinstance(limits, RateLimitsUpdated) and limits.rate_limits == []


def test_commit_and_item_done_fields() -> None:
    committed = parse_server_event(
        {
            "type": "input_audio_buffer.committed",
            "previous_item_id": None,
            "item_id": "item_1",
            "event": {
                "type": "input.committed",
                "session_id": "sess_1",
                "turn_id": 1,
                "epoch": 0,
                "history_len": 1,
                "message": {"role": "user", "content": []},
                "realtime_item_id": "item_1",
            },
        }
    )
    assert isinstance(committed, InputAudioBufferCommitted) and committed.history_len == 1
    done = parse_server_event(
        {"type": "conversation.item.done", "previous_item_id": "item_0", "item": {"id": "item_1"}}
    )
    assert isinstance(done, ConversationItemDone) and done.previous_item_id == "item_0"


def test_ill_typed_fields_read_as_unknown() -> None:
    bad: dict[str, Any] = {
        "model_speak": "yes",
        "audio_text_marks": {"text_chars": 1},
        "playback": [1, 2],
        "committed": 1,
        "duplex_event": "x",
        "history_len": True,
    }
    delta = parse_server_event({"type": "response.output_audio.delta", "metadata": bad})
    assert isinstance(delta, ResponseAudioDelta)
    assert delta.model_speak is None and delta.audio_text_marks == () and delta.playback is None
    done = parse_server_event({"type": "response.done", "response": {"metadata": bad}})
    assert isinstance(done, ResponseDone) and done.committed is None
    created = parse_server_event({"type": "response.created", "response": {"metadata": bad}})
    assert isinstance(created, ResponseCreated) and created.duplex_event == {}
    committed = parse_server_event({"type": "input_audio_buffer.committed", "event": bad})
    assert isinstance(committed, InputAudioBufferCommitted) and committed.history_len is None
    closed = parse_server_event({"type": "session.closed", "epoch": "1", "event": "x"})
    assert isinstance(closed, SessionClosed) and closed.epoch is None and closed.event == {}
    speak = parse_server_event({"type": "response.speak", "content_index": "0"})
    assert isinstance(speak, ResponseSpeak) and speak.content_index == 0


def test_capabilities_read_upstreams_fields() -> None:
    caps = Capabilities.from_dict(
        {
            "supports_session_lease": True,
            "supports_audio_truncate": False,
            "supports_client_commit": False,
            "input_modes": ["append_audio_chunk", 3],
            "signal_sources": ["model_native", "client_event", "server_policy"],
            "target_barge_in_latency_ms": None,
        }
    )
    assert caps.supports_session_lease and not caps.supports_audio_truncate
    assert not caps.supports_client_commit
    assert caps.input_modes == ("append_audio_chunk",)
    assert caps.signal_sources == ("model_native", "client_event", "server_policy")
    assert caps.target_barge_in_latency_ms is None
    # an older server says nothing: it takes commits, modes default to appends
    old = Capabilities.from_dict({"target_barge_in_latency_ms": True, "signal_sources": "x"})
    assert old.supports_client_commit and not old.supports_session_lease
    assert old.input_modes == ("append_audio_chunk",) and old.signal_sources == ()
    assert old.target_barge_in_latency_ms is None
