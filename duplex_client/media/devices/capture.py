"""What live capture hands the session: timestamped audio blocks and the latest camera frame."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Protocol

from duplex_client.framing.pcm_format import DEFAULT_PCM, PcmFormat

#: Level reported for digital silence.
SILENCE_DBFS = -96.0


def level_dbfs(pcm: bytes, fmt: PcmFormat = DEFAULT_PCM) -> float:
    """RMS level of PCM in `fmt` in dBFS (`SILENCE_DBFS` for silence or no samples)."""
    import numpy as np

    samples = np.frombuffer(pcm, dtype="<f4" if fmt.is_float else "<i2")
    if samples.size == 0:
        return SILENCE_DBFS
    full = 1.0 if fmt.is_float else 32768.0
    rms = float(np.sqrt(np.mean(samples.astype(np.float64) ** 2))) / full
    if rms < 1.0 / 32768.0:  # below one int16 step: silence
        return SILENCE_DBFS
    return max(SILENCE_DBFS, 20.0 * math.log10(rms))


@dataclass(frozen=True, slots=True)
class AudioBlock:
    """Captured mono LE audio in `fmt` (16 kHz int16 unless told) placed on the capture clock.

    `start_sample` counts samples at `fmt`'s rate from the first captured sample (media time
    0), so a gap (blocks lost to an overloaded consumer) shows as a jump. `captured_at`
    estimates, on the monotonic clock, when the block's first sample was captured.
    """

    pcm: bytes = field(repr=False)
    start_sample: int
    captured_at: float
    overflow: bool = False
    fmt: PcmFormat = DEFAULT_PCM

    @property
    def samples(self) -> int:
        """Samples in the block."""
        return len(self.pcm) // self.fmt.sample_width

    @property
    def end_sample(self) -> int:
        """Capture-clock position just after the block."""
        return self.start_sample + self.samples

    @property
    def duration_s(self) -> float:
        """Length in seconds."""
        return self.samples / self.fmt.sample_rate_hz


class AudioCapture(Protocol):
    """A live audio source: a microphone, a file played as one, or silence (no microphone).

    Blocks are 16 kHz int16 unless the source is `Retargetable` (`framing.pcm_format`) and
    was told the session's format before `start()`, as the package's sources are.
    """

    @property
    def kind(self) -> str:
        """`microphone`, `wav`/`audio_file` (file-backed) or `none` (no microphone)."""
        ...

    @property
    def level_dbfs(self) -> float:
        """Level of the latest block (for meters)."""
        ...

    async def start(self) -> None:
        """Open the device or file; raises `DeviceError`/`MediaError` with a one-line reason."""
        ...

    async def read(self) -> AudioBlock | None:
        """The next block once captured (None: the source ended); safe to cancel."""
        ...

    async def close(self) -> None:
        """Stop capturing (idempotent)."""
        ...

    def info(self) -> dict[str, Any]:
        """The timeline's `audio_source` facts."""
        ...


@dataclass(frozen=True, slots=True)
class CapturedFrame:
    """One camera frame: a BGR array (or an `EncodedImage` a page already scaled and
    encoded), its sequence number and monotonic capture time."""

    image: Any = field(repr=False)
    seq: int
    captured_at: float


class FrameCapture(Protocol):
    """A live picture source: a camera, a video file played as one, or a still image."""

    @property
    def frames_captured(self) -> int:
        """Frames read so far."""
        ...

    @property
    def error(self) -> str | None:
        """Why capture stopped, if it failed."""
        ...

    def start(self) -> None:
        """Open the device or file; raises `DeviceError` with a one-line reason."""
        ...

    def latest(self) -> CapturedFrame | None:
        """The most recent frame (None before the first)."""
        ...

    def close(self) -> None:
        """Stop capturing (idempotent)."""
        ...

    def info(self) -> dict[str, Any]:
        """Facts for the timeline's `video` object."""
        ...
