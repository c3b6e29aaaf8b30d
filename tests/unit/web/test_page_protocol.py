"""The page protocol: binary frames, the start request, untrusted fields bounded; the clock."""

from __future__ import annotations

import struct

import pytest

from duplex_client.web.clock import PageClock
from duplex_client.web.protocol import (
    AUDIO_HEADER,
    FRAME_HEADER,
    AudioPacket,
    FramePacket,
    PageError,
    answer_frame,
    parse_binary,
    parse_start,
    parse_text,
)

MODES = ("model", "vad", "ptt")


def start(**fields: object) -> dict[str, object]:
    msg: dict[str, object] = {"type": "start", "mode": "model", "audio": True, "video": False}
    msg["capture_rate"] = 48000
    return msg | fields


def test_audio_and_frames_are_read_with_their_headers() -> None:
    pcm = struct.pack("<3h", 1, -2, 3)
    audio = parse_binary(AUDIO_HEADER.pack(1, 960, 1234.5) + pcm)
    assert audio == AudioPacket(960, 1234.5, pcm)
    frame = parse_binary(FRAME_HEADER.pack(2, 640, 360, 7, 99.0) + b"\xff\xd8jpeg")
    assert frame == FramePacket(7, 99.0, 640, 360, b"\xff\xd8jpeg")
    assert answer_frame(3, b"ab") == struct.pack("<B3xI", 3, 3) + b"ab"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "empty binary message"),
        (AUDIO_HEADER.pack(1, 0, 0.0) + b"\x01", "odd byte count"),
        (b"\x09" + bytes(20), "unknown binary message (kind 9"),
        (b"\x02" + bytes(5), "unknown binary message (kind 2"),
    ],
)
def test_bad_binary_messages_are_refused(data: bytes, message: str) -> None:
    with pytest.raises(PageError, match=message.replace("(", r"\(")):
        parse_binary(data)


def test_a_start_keeps_bounded_facts_for_session_json() -> None:
    msg = start(
        user_agent="x" * 5000,
        echo={"echoCancellation": False, "noiseSuppression": "yes", "other": True},
        devices={"microphone": "USB mic", "camera": None, "data:evil": "no"},
        tracks={"audio": {"sampleRate": 48000, "deviceId": "d", "groupId": "g"}, "screen": {}},
    )
    request = parse_start(msg, MODES)
    assert (request.mode, request.capture_rate, request.audio, request.video) == (
        "model", 48000, True, False,
    )  # fmt: skip
    facts = request.facts
    assert facts["source"] == "browser" and len(facts["user_agent"]) == 512
    assert facts["echo"] == {
        "echoCancellation": False, "noiseSuppression": None, "autoGainControl": None,
    }  # fmt: skip
    assert facts["devices"] == {"microphone": "USB mic", "camera": None}
    assert facts["tracks"] == {"audio": {"sampleRate": 48000}}


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"mode": "vad"}, "mode must be one of model, ptt, got 'vad'"),
        ({"audio": False, "video": False}, "neither a microphone nor a camera"),
        ({"capture_rate": 100}, "capture_rate must be 8000..192000 Hz, got 100"),
        ({"capture_rate": True}, "capture_rate must be"),
        ({"video": "yes"}, "video must be true or false"),
    ],
)
def test_a_bad_start_is_refused(fields: dict[str, object], message: str) -> None:
    with pytest.raises(PageError, match=message):
        parse_start(start(**fields), ("model", "ptt"))


def test_camera_only_needs_no_capture_rate() -> None:
    request = parse_start(start(audio=False, video=True, capture_rate=None), MODES)
    assert request.capture_rate == 0 and request.facts["capture_rate_hz"] is None


@pytest.mark.parametrize("text", ["nope", "[1, 2]", '{"kind": "x"}', '{"type": 3}'])
def test_text_messages_must_be_typed_objects(text: str) -> None:
    with pytest.raises(PageError):
        parse_text(text)


def test_the_page_clock_keeps_the_round_trip_with_the_least_delay() -> None:
    clock = PageClock()
    with pytest.raises(RuntimeError, match="not synced"):
        clock.to_monotonic(0.0)
    # page time = monotonic + 100 s; the answer is read at the middle of the round trip
    clock.pong(10.000, 110_010.0, 10.020)  # 20 ms round trip, answered at its middle
    assert clock.to_monotonic(110_010.0) == pytest.approx(10.010)
    clock.pong(11.000, 111_000.0, 11.200)  # a slow one (queued answer): not used
    assert clock.rtt_ms == pytest.approx(20.0)
    assert clock.to_monotonic(111_000.0) == pytest.approx(11.000)
    clock.pong(12.000, 112_001.0, 12.002)  # a faster one wins
    assert clock.rtt_ms == pytest.approx(2.0) and clock.to_monotonic(112_001.0) == pytest.approx(
        12.001
    )
