"""Live sources behind fake device modules: microphone, file microphone, camera, devices."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import numpy as np
import pytest

from duplex_client.media.devices.camera import Camera, CameraFeed
from duplex_client.media.devices.capture import SILENCE_DBFS, level_dbfs
from duplex_client.media.devices.filemic import FileMicrophone
from duplex_client.media.devices.lookup import (
    DeviceError,
    audio_devices,
    camera_devices,
    camera_source,
    load_sounddevice,
    resolve_audio_device,
)
from duplex_client.media.devices.mic import Microphone
from tests.support.media_files import dominant_hz, frame_index, tone, write_audio_file
from tests.unit.framing.fakes import FakeClock
from tests.unit.live.fakes import FakeCameras, FakeSoundDevice


def tone_pcm(seconds: float, rate: int, hz: float, channels: int = 1) -> bytes:
    return (tone(seconds, rate, hz, channels).T * 32767).astype("<i2").tobytes()


async def read_n(mic: Microphone, n: int) -> list[bytes]:
    out = []
    for _ in range(n):
        block = await asyncio.wait_for(mic.read(), 2)
        assert block is not None
        out.append(block)
    return out  # type: ignore[return-value]


async def test_microphone_opens_at_16k_and_counts_samples() -> None:
    sd = FakeSoundDevice(pcm=tone_pcm(1.0, 16000, 440), pace=None)
    mic = Microphone(sd=sd, block_ms=20)
    await mic.start()
    stream = sd.inputs[0]
    assert (stream.samplerate, stream.channels, stream.blocksize) == (16000, 1, 320)
    stream.feed(1000)
    blocks = await read_n(mic, 50)
    assert [b.start_sample for b in blocks] == [320 * i for i in range(50)]  # type: ignore[attr-defined]
    pcm = b"".join(b.pcm for b in blocks)  # type: ignore[attr-defined]
    assert pcm == tone_pcm(1.0, 16000, 440)
    assert mic.level_dbfs > -20
    assert mic.info() == {"kind": "microphone", "path": None, "duration_ms": 1000, "sha256": None}
    await mic.close()
    assert stream.closed and await mic.read() is None


async def test_microphone_resamples_a_48k_stereo_device() -> None:
    sd = FakeSoundDevice(
        pcm=tone_pcm(1.0, 48000, 500, channels=2), rate=48000, channels=2, pace=None
    )
    sd.accept_rates = (48000,)
    mic = Microphone(sd=sd)
    await mic.start()
    stream = sd.inputs[0]
    assert (stream.samplerate, stream.channels) == (48000, 1)
    stream.feed(1000)
    blocks = await read_n(mic, 50)
    pcm = b"".join(b.pcm for b in blocks)  # type: ignore[attr-defined]
    assert abs(len(pcm) // 2 - 16000) < 200
    assert abs(dominant_hz(pcm) - 500) < 20
    assert blocks[-1].start_sample + blocks[-1].samples == len(pcm) // 2  # type: ignore[attr-defined]
    await mic.close()


async def test_microphone_drops_oldest_blocks_as_a_gap_when_the_consumer_stalls() -> None:
    sd = FakeSoundDevice(pcm=tone_pcm(1.0, 16000, 440), pace=None)
    mic = Microphone(sd=sd, block_ms=20, queue_s=0.1)  # 5 blocks at most
    await mic.start()
    sd.inputs[0].feed(200)  # 10 blocks
    await asyncio.sleep(0.01)
    first = await mic.read()
    assert first is not None and first.start_sample == 5 * 320
    assert mic.dropped_samples == 5 * 320
    await mic.close()


async def test_no_input_device_is_a_clear_error() -> None:
    with pytest.raises(DeviceError, match="no audio microphone"):
        await Microphone(sd=FakeSoundDevice(devices=False)).start()


def test_portaudio_missing_names_libportaudio2() -> None:
    try:
        import sounddevice  # noqa: F401
    except OSError:
        with pytest.raises(DeviceError, match="install libportaudio2"):
            load_sounddevice()
    else:
        assert load_sounddevice() is not None


def test_device_listing_and_selection() -> None:
    sd = FakeSoundDevice()
    devices = audio_devices(sd)
    assert [(d.index, d.name, d.default_input, d.default_output) for d in devices] == [
        (0, "Fake Mic", True, False),
        (1, "Fake Speaker", False, True),
    ]
    assert resolve_audio_device(sd, None, "output").index == 1
    assert resolve_audio_device(sd, "mic", "input").index == 0
    assert resolve_audio_device(sd, "0", "input").name == "Fake Mic"
    with pytest.raises(DeviceError, match="index 1"):
        resolve_audio_device(sd, "1", "input")
    assert camera_devices(FakeCameras(), probes=2) == [0, 1]
    assert camera_devices(FakeCameras(available=False), probes=2) == []
    assert camera_source("2") == 2 and camera_source("clip.mp4") == "clip.mp4"


async def test_file_microphone_paces_on_absolute_deadlines(tmp_path: Path) -> None:
    wav = write_audio_file(tmp_path / "a.wav", 0.1, 16000, 300)
    clock = FakeClock()
    mic = FileMicrophone(wav, block_ms=20, clock=clock.now, sleep=clock.sleep)
    await mic.start()
    t0 = clock.now()
    blocks = [await mic.read() for _ in range(8)]
    assert [round(clock.now() - t0, 3) for _ in [0]] == [0.16]
    assert [b.start_sample for b in blocks if b] == [320 * i for i in range(8)]
    assert [b.captured_at - t0 for b in blocks if b] == pytest.approx([0.02 * i for i in range(8)])
    assert blocks[-1] is not None and blocks[-1].pcm == bytes(640)  # silence after the file
    assert mic.info()["kind"] == "wav" and mic.info()["duration_ms"] == 100
    ended = FileMicrophone(wav, after="end", clock=clock.now, sleep=clock.sleep)
    await ended.start()
    assert len([b async for b in _until_none(ended)]) == 5


async def _until_none(mic: FileMicrophone):  # type: ignore[no-untyped-def]
    while (block := await mic.read()) is not None:
        yield block


def test_level_meter() -> None:
    assert level_dbfs(b"") == SILENCE_DBFS and level_dbfs(bytes(100)) == SILENCE_DBFS
    full = np.full(100, 32767, dtype="<i2").tobytes()
    assert level_dbfs(full) == pytest.approx(0, abs=0.01)


def test_camera_latest_frame_wins_and_is_encoded_once_per_frame() -> None:
    cams = FakeCameras(fps=50, pace=1.0)
    cam = Camera(0, capture_factory=cams)
    cam.start()
    try:
        deadline = 50
        while cam.frames_captured < 5 and deadline:
            deadline -= 1
            time.sleep(0.02)
        feed = CameraFeed(cam, origin=lambda: 0.0, jpeg_quality=90, frame_max_side=32)
        assert feed.ready()
        group = feed.latest()
        assert group is not None and group.base.data[:3] == b"\xff\xd8\xff"
        assert (group.base.width, group.base.height) == (32, 24)
        assert cam.info()["kind"] == "camera" and cam.info()["path"] is None
    finally:
        cam.close()
    first = feed.latest()
    again = feed.latest()  # the camera stopped: the same frame comes back held
    assert first is not None and again is not None
    assert again.held and again.base is first.base


def test_camera_missing_is_a_clear_error() -> None:
    with pytest.raises(DeviceError, match="no camera found"):
        Camera(0, capture_factory=FakeCameras(available=False)).start()


def test_video_file_camera_is_paced_and_holds_its_last_frame(tmp_path: Path) -> None:
    from tests.support.media_files import write_clip

    clip = write_clip(tmp_path / "c.mp4", video_seconds=1.0, fps=10)
    clock = FakeClock()
    slept: list[float] = []

    def sleep(s: float) -> None:
        slept.append(s)
        clock.t += s

    cam = Camera(str(clip), clock=clock.now, sleep=sleep)
    assert cam.paced
    cam.start()
    assert cam._thread is not None
    cam._thread.join(5)
    assert cam.ended and cam.frames_captured == 10
    last = cam.latest()
    assert last is not None and frame_index(last.image) == 9
    assert last.captured_at == pytest.approx(100.0 + 0.9)
    cam.close()


def test_image_file_camera_is_a_still() -> None:
    cam = Camera("photo.png", capture_factory=FakeCameras(pace=None))
    cam.start()
    cam.close()
    assert cam.info()["kind"] == "image"
