"""Codec round trips, data-URL stripping and the wire shape of client events."""

from __future__ import annotations

import base64
import json

import pytest

from duplex_client.protocol import (
    CLIENT_EVENT_TYPES,
    CodecError,
    InputAudioBufferAppend,
    InputAudioBufferCommit,
    PlaybackAck,
    SessionResume,
    b64decode,
    b64encode,
    dumps,
    encode_image,
    loads,
    new_client_event_id,
    strip_data_url,
)


def test_base64_matches_stdlib_and_rejects_garbage() -> None:
    data = bytes(range(256)) * 3
    assert b64encode(data) == base64.b64encode(data).decode()
    assert b64decode(b64encode(data)) == data
    with pytest.raises(CodecError):
        b64decode("not*base64!")


def test_dumps_loads_round_trip_unicode() -> None:
    event = {"type": "x", "text": "héllo ✓", "n": [1, 2.5, None, True]}
    assert loads(dumps(event)) == event
    assert json.loads(dumps(event).decode()) == event


def test_data_url_prefix_is_stripped_and_bytes_encoded() -> None:
    jpeg = b"\xff\xd8\xff\xe0fake"
    bare = b64encode(jpeg)
    assert strip_data_url("data:image/jpeg;base64," + bare) == bare
    assert strip_data_url(bare) == bare
    assert strip_data_url("data:text/plain,hello") == "data:text/plain,hello"
    assert encode_image(jpeg) == bare
    assert encode_image("data:image/png;base64," + bare) == bare


def test_event_ids_are_evt_32_hex_and_unique() -> None:
    ids = {new_client_event_id() for _ in range(100)}
    assert len(ids) == 100
    assert all(i.startswith("evt_") and len(i) == 36 for i in ids)
    int(next(iter(ids))[4:], 16)


def test_append_wire_shape_audio_and_vision() -> None:
    audio = InputAudioBufferAppend(
        audio="AAAA",
        duration_ms=200,
        audio_end_ms=1000,
        video_frames=("/9j/",),
        media_start_ms=800,
        media_end_ms=1000,
        unit_index=0,
        is_speech=True,
    ).to_dict()
    assert audio["type"] == "input_audio_buffer.append"
    assert audio["audio_start_ms"] == 800 and audio["audio_end_ms"] == 1000
    assert audio["format"] == "pcm16" and audio["sample_rate_hz"] == 16000
    assert audio["video_frames"] == ["/9j/"] and audio["unit_index"] == 0
    vision = InputAudioBufferAppend(
        audio="",
        duration_ms=0,
        audio_end_ms=0,
        format=None,
        sample_rate_hz=None,
        video_frames=("/9j/",),
        is_speech=False,
    ).to_dict()
    assert "format" not in vision and "sample_rate_hz" not in vision and vision["audio"] == ""
    assert "media_start_ms" not in vision and vision["is_speech"] is False


def test_commit_sends_response_create_only_when_set() -> None:
    assert "response_create" not in InputAudioBufferCommit().to_dict()
    assert InputAudioBufferCommit(response_create=False).to_dict()["response_create"] is False
    assert InputAudioBufferCommit(final=False).to_dict()["final"] is False


def test_playback_ack_item_id_and_committed_clamp() -> None:
    ack = PlaybackAck(
        response_id="resp_1", played_ms=1840, committed_ms=5000, truncate=True
    ).to_dict()
    assert (
        ack["item_id"] == "item_resp_1" and ack["committed_ms"] == 1840 and ack["truncate"] is True
    )
    assert PlaybackAck(response_id="r", played_ms=10).to_dict()["committed_ms"] == 10


def test_resume_and_registry() -> None:
    d = SessionResume(
        session_id="duplex-1", resume_token="rt", last_received_server_event_seq=57
    ).to_dict()
    assert d["last_received_server_event_seq"] == 57
    assert {
        "session.update",
        "input_audio_buffer.append",
        "playback.ack",
        "session.event_ack",
        "response.cancel",
        "output_audio_buffer.clear",
        "session.close",
    } <= set(CLIENT_EVENT_TYPES)
