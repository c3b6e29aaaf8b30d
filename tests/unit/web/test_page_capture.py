"""The page's microphone and camera as a live session's capture."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from duplex_client.framing.pcm_format import DEFAULT_PCM
from duplex_client.framing.sources import EncodedImage
from duplex_client.media.devices.camera import CameraFeed
from duplex_client.media.devices.lookup import DeviceError
from duplex_client.web.capture import BrowserCamera, BrowserMicrophone
from duplex_client.web.protocol import AudioPacket, FramePacket


def tone(samples: int, rate: int = 24000) -> bytes:
    t = np.arange(samples) / rate
    return (np.sin(2 * np.pi * 440 * t) * 8000).astype("<i2").tobytes()


async def test_blocks_become_the_session_format_on_this_clock_with_gaps_kept() -> None:
    posted: list[Any] = []
    mic = BrowserMicrophone(posted.append, lambda ms: ms / 1000, 24000)
    mic.set_output(DEFAULT_PCM)
    mic.feed(AudioPacket(0, 0.0, tone(480)))  # before start: dropped
    await mic.start()
    assert posted == [{"type": "capture", "audio": True}]
    with pytest.raises(RuntimeError):
        mic.set_output(DEFAULT_PCM)
    mic.feed(AudioPacket(0, 5000.0, tone(480)))
    mic.feed(AudioPacket(480, 5020.0, tone(480)))
    mic.feed(AudioPacket(1440, 5060.0, tone(480)))  # one 20 ms block lost on the way
    blocks = [await mic.read() for _ in range(3)]
    assert all(b is not None for b in blocks)
    first, second, third = (b for b in blocks if b is not None)
    assert first.captured_at == pytest.approx(5.0) and first.start_sample == 0
    assert second.start_sample == first.end_sample
    assert third.start_sample - second.end_sample == 320  # the lost block's time, at 16 kHz
    total = sum(b.samples for b in (first, second, third))
    assert 3 * 320 - 100 <= total <= 3 * 320  # 24 kHz → 16 kHz (the resampler holds back its lag)
    assert mic.level_dbfs > -30
    info = mic.info()
    assert info["original_format"] == {
        "sample_rate_hz": 24000,
        "channels": 1,
        "sample_format": "pcm16",
    }
    assert info["conversions"] == [{"step": "resampled", "from": 24000, "to": 16000}]
    mic.lost("the browser's microphone stopped (unplugged)")
    with pytest.raises(DeviceError, match="unplugged"):
        await mic.read()
    await mic.close()
    assert posted[-1] == {"type": "capture", "audio": False}


async def test_a_closed_microphone_ends() -> None:
    mic = BrowserMicrophone(lambda m: None, lambda ms: ms / 1000, 48000)
    await mic.start()
    await mic.close()
    assert await mic.read() is None


def test_the_camera_sends_the_page_jpeg_as_it_came() -> None:
    posted: list[Any] = []
    camera = BrowserCamera(
        posted.append, lambda ms: ms / 1000, period_ms=1000, max_side=640, quality=80
    )
    camera.feed(FramePacket(1, 0.0, 64, 48, b"early"))  # before start: ignored
    assert camera.latest() is None
    camera.start()
    assert posted == [
        {"type": "camera", "on": True, "period_ms": 1000, "max_side": 640, "quality": 80}
    ]
    camera.feed(FramePacket(1, 10_250.0, 64, 48, b"\xff\xd8one"))
    feed = CameraFeed(camera, lambda: 10.0)
    group = feed.latest()
    assert group is not None
    assert group.base == EncodedImage(b"\xff\xd8one", 250, 64, 48)
    again = feed.latest()
    assert again is not None and again.held  # no newer frame: the same one, held
    assert camera.info()["num_frames"] == 1 and camera.info()["width"] == 64
    camera.lost("the browser's camera stopped (ended)")
    assert camera.latest() is None and camera.error is not None
    camera.close()
    assert posted[-1] == {"type": "camera", "on": False}
