"""The live camera's JPEG is made on a worker thread, never on the event loop's.

The frame a unit carries is still the capture's latest when the unit closes, and its bytes are
those a direct `encode_jpeg` of the same pixels gives.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import duplex_client.media.jpeg as jpeg
from duplex_client.client.prefetch import planning_pool
from duplex_client.framing import FramerConfig, PlannedAppend
from duplex_client.framing.live import LiveFramer
from duplex_client.media.devices.camera import CameraFeed
from duplex_client.media.devices.capture import CapturedFrame
from duplex_client.run.live import LiveDevices, run_live
from duplex_client.run.options import RunOptions
from duplex_client.server import ReferenceServer
from tests.integration.live.helpers import tone_pcm, write_wav
from tests.unit.framing.fakes import caps, speech_pcm
from tests.unit.live.fakes import FakeCameras, FakeSoundDevice

QUALITY, MAX_SIDE = 80, 640
BLOCK = speech_pcm(20)  # one 20 ms microphone block


class Encodes:
    """A spy around the real `encode_jpeg`: the thread each call ran on, its input and output."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, delay_s: float = 0.0) -> None:
        self.calls: list[tuple[int, Any, bytes]] = []
        self.delay_s = delay_s
        real = jpeg.encode_jpeg

        def spy(image: Any, quality: int) -> bytes:
            time.sleep(self.delay_s)
            data = real(image, quality)
            self.calls.append((threading.get_ident(), image.copy(), data))
            return data

        monkeypatch.setattr(jpeg, "encode_jpeg", spy)

    @property
    def threads(self) -> set[int]:
        return {t for t, _, _ in self.calls}


class SteppedCapture:
    """A `FrameCapture` whose latest frame the test sets (`show`)."""

    def __init__(self) -> None:
        self.frames_captured = 0
        self.error: str | None = None
        self._latest: CapturedFrame | None = None

    def show(self, image: Any, captured_at: float) -> None:
        self.frames_captured += 1
        self._latest = CapturedFrame(image, self.frames_captured, captured_at)

    def start(self) -> None:
        pass

    def latest(self) -> CapturedFrame | None:
        return self._latest

    def close(self) -> None:
        pass

    def info(self) -> dict[str, Any]:
        return {"kind": "camera"}


def noise(i: int) -> Any:
    """A 1280×720 picture that JPEG cannot make trivial (downscaled to 640 before encoding)."""
    return np.random.default_rng(i).integers(0, 256, (720, 1280, 3), dtype=np.uint8)


def off_loop_feed(capture: SteppedCapture, origin: float = 0.0) -> CameraFeed:
    """The feed as the live session makes it: JPEGs on the planning pool's threads."""
    return CameraFeed(
        capture,
        lambda: origin,
        jpeg_quality=QUALITY,
        frame_max_side=MAX_SIDE,
        executor=planning_pool(),
    )


def expected_jpeg(image: Any) -> bytes:
    return jpeg.encode_jpeg(jpeg.resize_to_fit(image, MAX_SIDE), QUALITY)


async def send(feed: CameraFeed, appends: list[PlannedAppend]) -> list[PlannedAppend]:
    """What the session does before each send: await the encode, then take the bytes."""
    out = []
    for a in appends:
        await feed.encoded(a)
        out.append(feed.resolve(a))
    return out


async def test_the_frame_at_unit_close_is_encoded_on_a_worker_with_identical_bytes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    loop_thread = threading.get_ident()
    capture = SteppedCapture()
    feed = off_loop_feed(capture, origin=100.0)
    framer = LiveFramer(FramerConfig.from_capabilities(caps("minicpmo")))
    framer.set_camera(feed)
    pictures = [noise(i) for i in range(3)]
    want_direct = [expected_jpeg(p) for p in pictures]  # before the spy: no thread recorded
    spy = Encodes(monkeypatch)

    sent: list[PlannedAppend] = []
    for k in range(150):  # 3 s of 20 ms blocks: units close at 1, 2 and 3 s
        if k % 50 == 49:  # the frame captured last before the unit's closing block
            capture.show(pictures[k // 50], captured_at=100.0 + k * 0.02)
        appends = framer.push(BLOCK, upload=True)
        if any(a.frames for a in appends):
            # a newer frame arrives before the bytes are awaited: the unit keeps its own
            capture.show(noise(99), captured_at=100.0 + k * 0.02 + 0.01)
        sent += await send(feed, appends)

    framed = [a for a in sent if a.frames is not None]
    assert [a.audio_end_ms for a in framed] == [1000, 2000, 3000]
    assert [a.video_frames[0] for a in framed] == want_direct
    assert [a.frames.base.pts_ms for a in framed if a.frames] == [980, 1980, 2980]
    assert all(
        (a.frames.base.width, a.frames.base.height) == (640, 360) for a in framed if a.frames
    )
    assert not any(a.frames.held for a in framed if a.frames)
    assert len(spy.calls) == 3  # one encode per unit frame, none per captured frame
    assert loop_thread not in spy.threads


async def test_a_held_frame_is_encoded_once_and_resent_with_the_same_bytes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    capture = SteppedCapture()
    feed = off_loop_feed(capture)
    framer = LiveFramer(FramerConfig.from_capabilities(caps("minicpmo")))
    framer.set_camera(feed)
    capture.show(noise(7), captured_at=0.5)
    want = expected_jpeg(noise(7))
    spy = Encodes(monkeypatch)
    # two units close in one call (lost blocks): both carry the one captured frame
    sent = await send(feed, framer.idle(16000 * 2))
    framed = [a for a in sent if a.frames is not None]
    assert len(framed) == 2 and [a.frames.held for a in framed if a.frames] == [False, True]
    assert framed[0].video_frames == framed[1].video_frames == (want,)
    assert len(spy.calls) == 1


async def test_the_loop_keeps_running_while_a_frame_encodes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    capture = SteppedCapture()
    feed = off_loop_feed(capture)
    framer = LiveFramer(FramerConfig.from_capabilities(caps("minicpmo")))
    framer.set_camera(feed)
    capture.show(noise(1), captured_at=0.0)
    want = expected_jpeg(noise(1))
    spy = Encodes(monkeypatch, delay_s=0.3)  # a slow encode: inline it would stall the loop
    ticks: list[float] = []

    async def ticker() -> None:
        while True:
            ticks.append(time.monotonic())
            await asyncio.sleep(0.005)

    task = asyncio.create_task(ticker())
    await asyncio.sleep(0.02)
    started = time.monotonic()
    appends = []
    for _ in range(50):
        appends += framer.push(BLOCK, upload=True)
    pushed = time.monotonic() - started
    sent = await send(feed, appends)
    task.cancel()
    assert pushed < 0.15  # the closing push did not wait for the encode
    during = [t for t in ticks if t >= started]
    gaps = [b - a for a, b in itertools.pairwise(during)]
    assert len(during) > 10 and max(gaps) < 0.15  # the loop ran while the worker encoded
    assert [a.video_frames for a in sent if a.frames] == [(want,)]
    assert len(spy.calls) == 1


async def test_a_live_run_encodes_every_sent_frame_off_the_loop_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    loop_thread = threading.get_ident()
    spy = Encodes(monkeypatch)
    wav = write_wav(tmp_path / "tone.wav", tone_pcm(4000))
    devices = LiveDevices(
        sounddevice=FakeSoundDevice(speaker=False),
        video_capture=FakeCameras(fps=10, pace=None),  # the real `Camera` thread, fake frames
    )
    options = RunOptions(
        mic_file=str(wav), camera_file=str(tmp_path / "clip.mp4"), duration_s=2.5,
        no_playback=True, output_dir=tmp_path / "run",
    )  # fmt: skip
    async with ReferenceServer(engine="scripted") as server:
        result = await run_live(server.url, options, devices=devices)
        accepted = server.appends()
    assert result.ok, result.error
    assert result.timeline is not None
    rows = [r for r in result.timeline["appends"] if r["frames"]]
    assert len(rows) >= 2 and spy.calls
    assert loop_thread not in spy.threads
    encoded = {hashlib.sha256(data).hexdigest(): image for _, image, data in spy.calls}
    sent = [f["sha256"] for r in rows for f in r["frames"]]
    assert set(sent) <= set(encoded)  # every frame sent is one the worker encoded ...
    for sha in sent:  # ... with the bytes a direct encode of those pixels gives
        direct = jpeg.encode_jpeg(encoded[sha], QUALITY)
        assert hashlib.sha256(direct).hexdigest() == sha
    assert [f["sha256"] for r in accepted for f in r["frames"]] == sent
