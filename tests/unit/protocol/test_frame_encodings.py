"""Frames in appends: each `bytes` frame's base64, encoded once and shared between sessions."""

from __future__ import annotations

import base64
import os

from duplex_client.protocol.capabilities import Capabilities
from duplex_client.protocol.session.inputs import InputCounter, RecentFrameEncodings

PCM = b"\x00\x00" * 3200  # 200 ms at 16 kHz


def frames_of(counter: InputCounter, frame: bytes) -> list[str]:
    event, _ = counter.build(PCM, Capabilities(), video_frames=[frame])
    return list(event.video_frames or [])


def test_sessions_sending_one_image_share_its_encoding() -> None:
    jpeg = os.urandom(150_000)
    first, second = InputCounter("pcm16", 16000), InputCounter("pcm16", 16000)
    (a,) = frames_of(first, jpeg)
    (b,) = frames_of(second, jpeg)
    assert a == base64.b64encode(jpeg).decode() and a is b  # one text, not one a session
    (again,) = frames_of(first, jpeg)
    assert again is a


def test_equal_bytes_in_another_object_and_evicted_frames_are_encoded_right() -> None:
    recent = RecentFrameEncodings(size=2)
    frames = [os.urandom(1000) for _ in range(4)]
    texts = [recent.encoded(f) for f in frames]
    assert texts == [base64.b64encode(f).decode() for f in frames]
    copy = bytes(bytearray(frames[3]))
    assert copy is not frames[3] and recent.encoded(copy) == texts[3]
    assert recent.encoded(frames[0]) == texts[0]  # evicted long ago: encoded again, the same
    assert len(recent._by_id) == 2
