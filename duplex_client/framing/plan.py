"""Framer data: settings, the position a stream continues from, planned appends and the report."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Literal

from duplex_client.framing.pcm_format import DEFAULT_PCM, PcmFormat
from duplex_client.framing.sources import FrameGroup
from duplex_client.framing.units import UnitGrid, ms_to_samples
from duplex_client.protocol.capabilities import Capabilities, UnitKind

#: Which part of a run an append belongs to (the timeline's `segment`).
Segment = Literal["clip", "tail", "live"]
#: How a video's own soundtrack is fitted to whole units (protocol.md §10).
SoundtrackPolicy = Literal["trim", "pad", "full"]
SEGMENTS: tuple[Segment, ...] = ("clip", "tail", "live")
SOUNDTRACK_POLICIES: tuple[SoundtrackPolicy, ...] = ("trim", "pad", "full")
#: Default append length; it divides the default unit lengths (protocol.md §3.1).
DEFAULT_CHUNK_MS = 200


@dataclass(frozen=True, slots=True)
class FramerConfig:
    """What the framer needs from the session: grid, chunk size and the legal unit kinds.

    `video_required`: every unit must carry frames (no AUDIO units), so each append is a
    whole unit. `vision_allowed`: frame-only units may be sent; otherwise frames without
    audio ride zero PCM (the fallback). `audio_allowed`: audio-bearing units may be sent.
    """

    grid: UnitGrid = field(default_factory=UnitGrid)
    chunk_ms: int = DEFAULT_CHUNK_MS
    vision_allowed: bool = True
    video_required: bool = False
    audio_allowed: bool = True
    max_frames: int = 2
    #: Bytes per PCM sample (2: pcm16, 4: pcm_f32le); the grid holds the rate.
    sample_width: int = 2

    def __post_init__(self) -> None:
        if self.chunk_ms <= 0 or self.grid.sample_rate_hz * self.chunk_ms // 1000 <= 0:
            raise ValueError(f"chunk_ms must be positive, got {self.chunk_ms}")
        if self.max_frames < 1:
            raise ValueError("max_frames must be at least 1")

    @classmethod
    def from_capabilities(
        cls,
        caps: Capabilities,
        *,
        chunk_ms: int = DEFAULT_CHUNK_MS,
        grid: UnitGrid | None = None,
        pcm: PcmFormat = DEFAULT_PCM,
    ) -> FramerConfig:
        """The config a server's capabilities imply (`grid` overrides the advertised one).

        `pcm` is the session's input format: the grid is in its samples and appends carry it.
        """
        return cls(
            grid=grid or UnitGrid.from_capabilities(caps, sample_rate_hz=pcm.sample_rate_hz),
            sample_width=pcm.sample_width,
            chunk_ms=chunk_ms,
            vision_allowed=caps.allows(UnitKind.VISION),
            video_required=caps.video_required or not caps.allows(UnitKind.AUDIO),
            audio_allowed=caps.allows(UnitKind.AUDIO) or caps.allows(UnitKind.OMNI),
            # a session taking images as items gets one per unit (no stacked composite)
            max_frames=1 if caps.supports_image_input else caps.max_frames_per_append,
        )

    @property
    def chunk_samples(self) -> int:
        """Samples per append (the whole unit when video is required)."""
        return self.grid.sample_rate_hz * self.chunk_ms // 1000


@dataclass(frozen=True, slots=True)
class StreamPosition:
    """Where the session's timelines stand between streams, so a later stream continues them.

    `audio_samples` is the session's cumulative audio; the open audio unit (ordinal
    `audio_unit_index`) started at `unit_start_samples`; `unit_index` is the next unit's
    ordinal among all kinds; `media_ms` is the next stream's default `media_origin_ms`.
    """

    media_ms: int = 0
    unit_index: int = 0
    audio_samples: int = 0
    audio_unit_index: int = 0
    unit_start_samples: int = 0
    clip_had_audio: bool = True
    last_frames: FrameGroup | None = field(default=None, repr=False)

    @classmethod
    def after_audio(cls, audio_end_ms: int, grid: UnitGrid, *, media_ms: int = 0) -> StreamPosition:
        """The position after `audio_end_ms` of audio on a grid never re-anchored by a commit."""
        samples = ms_to_samples(audio_end_ms, grid.sample_rate_hz)
        k = grid.unit_at_sample(samples)
        return cls(
            media_ms=media_ms,
            unit_index=k,
            audio_samples=samples,
            audio_unit_index=k,
            unit_start_samples=grid.start_samples(k),
        )

    @property
    def unit_open(self) -> bool:
        """Whether the current audio unit is partly filled."""
        return self.audio_samples > self.unit_start_samples

    def after_commit(self, audio_end_samples: int | None = None) -> StreamPosition:
        """The position after a final commit sealed the turn (protocol.md §3.1).

        A commit inside a unit closes that unit early, so the grid re-anchors: the next audio
        unit starts at the commit's cumulative position and the closed residual takes a
        `unit_index`. A commit on a boundary changes nothing.
        """
        at = self.audio_samples if audio_end_samples is None else audio_end_samples
        if at <= self.unit_start_samples:
            return self
        return replace(
            self,
            unit_index=self.unit_index + 1,
            audio_unit_index=self.audio_unit_index + 1,
            unit_start_samples=at,
        )

    def moved(
        self, *, media_ms: int | None = None, unit_index: int | None = None
    ) -> StreamPosition:
        """This position with an explicit media origin and/or next unit index."""
        return replace(
            self,
            media_ms=self.media_ms if media_ms is None else media_ms,
            unit_index=self.unit_index if unit_index is None else unit_index,
        )


@dataclass(frozen=True, slots=True)
class PlannedAppend:
    """One append as the framer planned it: its PCM, frames, unit and place on both clocks."""

    segment: Segment
    pcm: bytes = field(repr=False)
    audio_start_samples: int
    audio_end_samples: int
    duration_ms: int
    audio_end_ms: int
    is_speech: bool | None
    frames: FrameGroup | None
    unit_kind: UnitKind | None
    unit_index: int | None
    media_start_ms: int
    media_end_ms: int
    fallback: bool = False

    @property
    def samples(self) -> int:
        """Samples of PCM carried."""
        return self.audio_end_samples - self.audio_start_samples

    @property
    def closes_unit(self) -> bool:
        """Whether this append closes (or, for VISION, is) a unit."""
        return self.unit_kind is not None

    @property
    def video_frames(self) -> tuple[bytes, ...]:
        """The encoded images to send (base first), empty without frames."""
        return () if self.frames is None else tuple(img.data for img in self.frames.images)


def audio_policies(
    audio_info: dict[str, Any] | None, frames: Any, policy: SoundtrackPolicy
) -> tuple[SoundtrackPolicy | None, SoundtrackPolicy | None]:
    """(soundtrack policy, video fit) for `Framer.plan`: a video's own soundtrack follows
    `policy`; an external audio file streamed with a video is fitted to it by `policy`."""
    if audio_info is None:
        return None, None
    if audio_info.get("kind") == "video_soundtrack":
        return policy, None
    video = frames is not None and int(getattr(frames, "duration_ms", 0) or 0) > 0
    return None, (policy if video else None)


@dataclass(slots=True)
class FramingReport:
    """What one planned stream amounted to; complete once its appends are exhausted."""

    soundtrack_policy: SoundtrackPolicy | None = None
    #: External audio with a video: how it was fitted to the video (None: not fitted).
    video_fit: SoundtrackPolicy | None = None
    video_ms: int = 0
    #: Silence added after external audio so that it lasts as long as the video.
    padded_to_video_ms: int = 0
    original_ms: int = 0
    trimmed_ms: int = 0
    padded_ms: int = 0
    clip_ms: int = 0
    tail_silence_ms: int = 0
    media_origin_ms: int = 0
    appends: int = 0
    has_audio: bool = False

    def soundtrack_record(self) -> dict[str, Any] | None:
        """The timeline's `soundtrack_policy` object (None unless the audio is a soundtrack)."""
        if self.soundtrack_policy is None:
            return None
        return {
            "policy": self.soundtrack_policy,
            "original_ms": self.original_ms,
            "trimmed_ms": self.trimmed_ms,
            "padded_ms": self.padded_ms,
        }

    def video_fit_record(self) -> dict[str, Any] | None:
        """`audio_source.fitted_to_video`: what was done to external audio shorter than its
        video (None: no video, or audio at least as long)."""
        if self.video_fit is None or self.video_ms <= self.original_ms:
            return None
        if self.video_fit == "full":
            return {
                "policy": "full",
                "audio_ms": self.original_ms,
                "video_ms": self.video_ms,
                "video_not_sent_ms": self.video_ms - self.original_ms,
            }
        return {
            "policy": self.video_fit,
            "audio_ms": self.original_ms,
            "video_ms": self.video_ms,
            "padded_ms": self.padded_to_video_ms + self.padded_ms,
        }
