"""The page's microphone and camera as a live session's capture (`media.devices.capture`).

`BrowserMicrophone` is an `AudioCapture`: the page's AudioWorklet sends PCM16 blocks of
about 20 ms at its AudioContext's rate with the index of their first sample and its capture
time; here they become `AudioBlock`s in the session's input format through the package's one
resampler, placed by counting samples (a jump in the page's index is a gap, as for a device)
and timed on this process's clock (`PageClock`). `BrowserCamera` is a `FrameCapture` whose
frames are JPEGs the page already scaled and encoded (`CameraFeed` sends them as they are).
Both start capturing on the page when the live session starts them, and stop when it stops.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from duplex_client.framing.pcm_format import DEFAULT_PCM, PcmFormat
from duplex_client.framing.sources import EncodedImage
from duplex_client.media.devices.capture import (
    SILENCE_DBFS,
    AudioBlock,
    CapturedFrame,
    level_dbfs,
)
from duplex_client.media.devices.lookup import DeviceError
from duplex_client.web.player import Post
from duplex_client.web.protocol import AudioPacket, FramePacket

if TYPE_CHECKING:
    from duplex_client.media.resample import Resampler

#: Blocks kept for a slow consumer before the oldest are dropped (their time becomes a gap).
QUEUE_S = 5.0


class BrowserMicrophone:
    """The page's microphone (see the module docstring); `feed` takes the page's blocks."""

    kind = "microphone"

    def __init__(
        self,
        post: Post,
        to_monotonic: Callable[[float], float],
        capture_rate: int,
        *,
        block_ms: int = 20,
        queue_s: float = QUEUE_S,
    ) -> None:
        self.post = post
        self.to_monotonic = to_monotonic
        self.capture_rate = capture_rate
        #: What `read()` delivers (the session's input format).
        self.output = DEFAULT_PCM
        self.level_dbfs = SILENCE_DBFS
        self.dropped_samples = 0
        self._max = max(4, round(queue_s * 1000 / block_ms))
        self._pending: deque[AudioPacket] = deque()
        self._ready = asyncio.Event()
        self._resampler: Resampler[Any] | None = None
        self._next_page_sample = 0
        self._samples = 0
        self._gap = 0.0
        self._started = False
        self._closed = False
        self._error: str | None = None

    def set_output(self, fmt: PcmFormat) -> None:
        """Deliver blocks in `fmt` (the session's input encoding and rate); before `start()`."""
        if self._started:
            raise RuntimeError("set_output() must come before start()")
        self.output = fmt

    async def start(self) -> None:
        """Ask the page to send its microphone from now on (its sample 0 is media time 0)."""
        import numpy as np

        from duplex_client.media.resample import Resampler

        out = self.output.sample_rate_hz
        self._resampler = (
            Resampler(self.capture_rate, out, dtype=np.float32)
            if self.output.is_float
            else Resampler(self.capture_rate, out)
        )
        self._started = True
        self.post({"type": "capture", "audio": True})

    def feed(self, packet: AudioPacket) -> None:
        """A block from the page (dropped before `start()` and after `close()`)."""
        if not self._started or self._closed:
            return
        if len(self._pending) >= self._max:
            lost = self._pending.popleft()
            self._gap += len(lost.pcm) // 2 * self.output.sample_rate_hz / self.capture_rate
        self._pending.append(packet)
        self._ready.set()

    def lost(self, reason: str) -> None:
        """The page's microphone stopped (unplugged, revoked): `read()` raises from now on."""
        self._error = reason
        self._ready.set()

    async def read(self) -> AudioBlock | None:
        """The next block from the page (None once closed; `DeviceError` once it was lost)."""
        while not self._pending:
            if self._error is not None:
                raise DeviceError(self._error)
            if self._closed:
                return None
            self._ready.clear()
            await self._ready.wait()
        packet = self._pending.popleft()
        assert self._resampler is not None, "start() first"
        import numpy as np

        skipped = packet.start_sample - self._next_page_sample
        if skipped > 0:  # the page lost blocks: their time passes as a gap
            self._gap += skipped * self.output.sample_rate_hz / self.capture_rate
        self._next_page_sample = packet.start_sample + len(packet.pcm) // 2
        gap = int(self._gap)
        if gap:
            self._gap -= gap
            self.dropped_samples += gap
            self._samples += gap
        kind = "<f4" if self.output.is_float else "<i2"
        samples = np.frombuffer(packet.pcm, "<i2")
        pcm = self._resampler.process(samples).astype(kind, copy=False).tobytes()
        at = self.to_monotonic(packet.captured_ms)
        block = AudioBlock(pcm, self._samples, at, False, self.output)
        self._samples += block.samples
        self.level_dbfs = level_dbfs(pcm, self.output)
        return block

    async def close(self) -> None:
        """Stop: the page stops sending (idempotent)."""
        if not self._closed:
            self._closed = True
            self._ready.set()
            if self._started:
                self.post({"type": "capture", "audio": False})

    def info(self) -> dict[str, Any]:
        """`audio_source` facts: the page's format and what was done to reach the session's."""
        from duplex_client.media.audio import AudioFormat

        original = AudioFormat(self.capture_rate, 1, "pcm16")
        return {
            "kind": "microphone",
            "path": None,
            "duration_ms": self._samples * 1000 // self.output.sample_rate_hz,
            "sha256": None,
            "original_format": original.to_dict(),
            "conversions": original.conversions(self.output),
        }


class BrowserCamera:
    """The page's camera: the latest JPEG it sent wins (see the module docstring)."""

    def __init__(
        self,
        post: Post,
        to_monotonic: Callable[[float], float],
        *,
        period_ms: int,
        max_side: int,
        quality: int,
    ) -> None:
        self.post = post
        self.to_monotonic = to_monotonic
        self.period_ms = period_ms
        self.max_side = max_side
        self.quality = quality
        self.frames_captured = 0
        self.error: str | None = None
        self.width = 0
        self.height = 0
        self._latest: CapturedFrame | None = None
        self._started = False

    def start(self) -> None:
        """Ask the page for a frame every `period_ms`, scaled to `max_side`, JPEG `quality`."""
        self._started = True
        self.post(
            {
                "type": "camera",
                "on": True,
                "period_ms": self.period_ms,
                "max_side": self.max_side,
                "quality": self.quality,
            }
        )

    def feed(self, packet: FramePacket) -> None:
        """A frame from the page (ignored before `start()`, after `close()` or a loss)."""
        if not self._started or self.error is not None:
            return
        self.frames_captured += 1
        self.width, self.height = packet.width, packet.height
        image = EncodedImage(packet.jpeg, 0, packet.width, packet.height)
        at = self.to_monotonic(packet.captured_ms)
        self._latest = CapturedFrame(image, self.frames_captured, at)

    def lost(self, reason: str) -> None:
        """The page's camera stopped: no more frames (units go on without them)."""
        self.error = reason
        self._latest = None

    def latest(self) -> CapturedFrame | None:
        """The most recent frame (None before the first, or once the camera was lost)."""
        return self._latest

    def close(self) -> None:
        """Stop: the page stops sending frames (idempotent)."""
        if self._started:
            self._started = False
            self.post({"type": "camera", "on": False})

    def info(self) -> dict[str, Any]:
        """Facts for the timeline's `video` object."""
        return {
            "kind": "camera",
            "path": None,
            "avg_fps": round(1000 / self.period_ms, 3),
            "num_frames": self.frames_captured,
            "rotation_deg": 0,
            "width": self.width,
            "height": self.height,
        }
