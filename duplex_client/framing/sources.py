"""What the framer consumes: PCM chunks and unit-aligned frame groups (pure data and protocols)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Protocol, runtime_checkable

#: The framer's input PCM format: signed 16-bit little-endian mono at 16 kHz.
INPUT_SAMPLE_RATE_HZ = 16000
BYTES_PER_SAMPLE = 2


@dataclass(frozen=True, slots=True)
class EncodedImage:
    """One encoded image (JPEG or PNG bytes) with where it came from on the media clock."""

    data: bytes = field(repr=False)
    pts_ms: int | tuple[int, ...]
    width: int = 0
    height: int = 0
    role: Literal["base", "composite"] = "base"


@dataclass(frozen=True, slots=True)
class FrameGroup:
    """The images one unit carries: a base frame and an optional stacked composite."""

    base: EncodedImage
    composite: EncodedImage | None = None
    held: bool = False

    @property
    def images(self) -> tuple[EncodedImage, ...]:
        """Base first, then the composite if any (at most 2 images)."""
        return (self.base,) if self.composite is None else (self.base, self.composite)


@runtime_checkable
class FrameSampler(Protocol):
    """Gives the frame group for a unit; calls come with non-decreasing `start_ms`."""

    @property
    def duration_ms(self) -> int:
        """Length of the video on its own timeline (0 for a still image)."""
        ...

    def group_for_unit(self, start_ms: int, end_ms: int) -> FrameGroup | None:
        """Frames for the unit spanning source-relative media time [start_ms, end_ms).

        The base frame is the sampled frame shown at `start_ms`; past the video's end the
        last sampled frame is returned with `held=True`. None only when there is no frame.
        """
        ...

    def info(self) -> dict[str, Any]:
        """Facts for the timeline's `video` object (kind, path, probe facts, sampling)."""
        ...


@runtime_checkable
class PcmSource(Protocol):
    """A finite stream of input PCM (16 kHz mono int16 LE bytes) in arbitrary chunk sizes."""

    def chunks(self) -> Iterator[bytes]:
        """PCM chunks in order; each has an even number of bytes."""
        ...

    def info(self) -> dict[str, Any]:
        """Facts for the timeline's `audio_source` object (kind, path, duration_ms, sha256)."""
        ...


@dataclass(slots=True)
class BytesPcmSource:
    """A `PcmSource` over PCM already in memory (tests, generated audio, notebooks)."""

    #: Its chunks are slices of memory: planning them costs less than a trip to a thread.
    in_memory: ClassVar[bool] = True
    pcm: bytes = field(repr=False)
    kind: str = "pcm"
    path: str | None = None
    chunk_bytes: int = 32000

    def chunks(self) -> Iterator[bytes]:
        """The PCM in `chunk_bytes` pieces."""
        for i in range(0, len(self.pcm), self.chunk_bytes):
            yield self.pcm[i : i + self.chunk_bytes]

    def info(self) -> dict[str, Any]:
        """Kind, path and duration."""
        samples = len(self.pcm) // BYTES_PER_SAMPLE
        return {
            "kind": self.kind,
            "path": self.path,
            "duration_ms": samples * 1000 // INPUT_SAMPLE_RATE_HZ,
            "sha256": None,
        }


@runtime_checkable
class AudioVisualSource(Protocol):
    """One stream's input: optional PCM and optional frames (`media.Clip` is one)."""

    @property
    def audio(self) -> PcmSource | None:
        """The PCM to send, if any."""
        ...

    @property
    def frames(self) -> FrameSampler | None:
        """The frames to send, if any."""
        ...


@dataclass(frozen=True, slots=True)
class MediaInput:
    """An `AudioVisualSource` built by hand: a WAV, frames, or both.

    A video's own soundtrack is recognised by `audio.info()["kind"] == "video_soundtrack"`,
    which is what makes the soundtrack policy apply.
    """

    audio: PcmSource | None = None
    frames: FrameSampler | None = None
