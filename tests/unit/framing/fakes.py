"""Test doubles for framing and streaming: a frame sampler, PCM, a fake clock and target."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from duplex_client.framing import EncodedImage, FrameGroup, samples_to_ms
from duplex_client.protocol import Capabilities, UnitKind

JPEG_MAGIC = b"\xff\xd8\xff"


def speech_pcm(ms: int, rate: int = 16000, *, extra_samples: int = 0) -> bytes:
    """Distinct non-zero int16 samples (a counter), so loss, duplication and order show."""
    n = rate * ms // 1000 + extra_samples
    return ((np.arange(n) % 30000) + 1).astype("<i2").tobytes()


def fake_jpeg(pts: int | tuple[int, ...]) -> bytes:
    """Bytes that pass the JPEG signature check and identify the frame."""
    return JPEG_MAGIC + repr(pts).encode()


@dataclass
class FakeSampler:
    """A video of `duration_ms` at `fps`, sampled at unit start; holds the last frame after."""

    duration_ms: int
    fps: float = 1.0
    stack: int = 1
    calls: list[tuple[int, int]] = field(default_factory=list)

    @property
    def num_frames(self) -> int:
        return max(1, math.ceil(self.duration_ms * self.fps / 1000))

    def _pts(self, t_ms: float) -> int:
        idx = min(int(t_ms * self.fps / 1000), self.num_frames - 1)
        return round(idx * 1000 / self.fps)

    def group_for_unit(self, start_ms: int, end_ms: int) -> FrameGroup | None:
        if self.calls:
            assert start_ms >= self.calls[-1][0], "start_ms must not decrease"
        self.calls.append((start_ms, end_ms))
        last_pts = self._pts(self.duration_ms)
        held = start_ms >= self.duration_ms
        pts = last_pts if held else self._pts(start_ms)
        base = EncodedImage(fake_jpeg(pts), pts, 64, 48)
        composite = None
        if self.stack > 1 and not held:
            sub = tuple(
                self._pts(start_ms + j * (end_ms - start_ms) / self.stack)
                for j in range(1, self.stack)
                if start_ms + j * (end_ms - start_ms) / self.stack < self.duration_ms
            )
            if sub:
                composite = EncodedImage(fake_jpeg(sub), sub, 128, 48, role="composite")
        return FrameGroup(base, composite, held=held)

    def info(self) -> dict[str, Any]:
        return {"kind": "file", "path": "clip.mp4", "duration_ms": self.duration_ms,
                "avg_fps": 30.0, "num_frames": self.num_frames, "rotation_deg": 0,
                "sampling": "unit_start", "fps": self.fps, "stack_frames": self.stack,
                "jpeg_quality": 90, "frame_max_side": 0}  # fmt: skip


PROFILES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "minicpmo": (("AUDIO", "VISION", "OMNI"), ()),
    "audio_required": (("AUDIO", "OMNI"), ("audio",)),
    "video_required": (("VISION", "OMNI"), ("video",)),
}


def caps(
    profile: str = "minicpmo", *, first: int = 1000, period: int = 1000, max_frames: int = 2
) -> Capabilities:
    """Capabilities of a profile (legal unit kinds, required modalities) with the given grid."""
    kinds, required = PROFILES[profile]
    optional = [m for m in ("audio", "video") if m not in required]
    return Capabilities.from_dict(
        {"first_unit_ms": first, "chunk_period_ms": period, "input_unit_kinds": list(kinds),
         "required_input_modalities": list(required), "optional_input_modalities": optional,
         "max_frames_per_append": max_frames}
    )  # fmt: skip


class FakeClock:
    """Time that only moves when slept on or spent; `now()` in seconds."""

    def __init__(self, start: float = 100.0) -> None:
        self.t = start
        self.sleeps: list[float] = []

    def now(self) -> float:
        return self.t

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.t += max(0.0, seconds)


@dataclass
class Sent:
    """One call the fake target received."""

    kind: str
    at: float
    event_id: str
    pcm: bytes = b""
    frames: tuple[bytes | str, ...] = ()
    fields: dict[str, Any] = field(default_factory=dict)


class FakeTarget:
    """A `StreamTarget` that records calls; each send costs `cost_s` of fake time."""

    def __init__(
        self,
        clock: FakeClock | None = None,
        *,
        capabilities: Capabilities | None = None,
        cost_s: float = 0.0,
    ) -> None:
        self.clock = clock or FakeClock()
        self._caps = capabilities or caps()
        self.cost_s = cost_s
        self.sent: list[Sent] = []
        self._samples = 0

    @property
    def capabilities(self) -> Capabilities:
        return self._caps

    @property
    def audio_end_ms(self) -> int:
        return samples_to_ms(self._samples)

    @property
    def appends(self) -> list[Sent]:
        return [s for s in self.sent if s.kind == "append"]

    async def append_input(
        self,
        pcm: bytes | None = None,
        *,
        video_frames: Sequence[bytes | str] = (),
        is_speech: bool | None = None,
        media_start_ms: int | None = None,
        media_end_ms: int | None = None,
        unit_index: int | None = None,
    ) -> str:
        event_id = f"evt_{len(self.sent):032x}"
        fields = {
            "is_speech": is_speech,
            "media_start_ms": media_start_ms,
            "media_end_ms": media_end_ms,
            "unit_index": unit_index,
        }
        self.sent.append(
            Sent("append", self.clock.now(), event_id, pcm or b"", tuple(video_frames), fields)
        )
        self._samples += len(pcm or b"") // 2
        self.clock.t += self.cost_s
        return event_id

    async def commit(self, *, final: bool = True, create_response: bool | None = None) -> str:
        event_id = f"evt_{len(self.sent):032x}"
        fields = {"final": final, "create_response": create_response}
        self.sent.append(Sent("commit", self.clock.now(), event_id, fields=fields))
        self.clock.t += self.cost_s
        return event_id


def kinds(appends: Iterator[Any] | Sequence[Any]) -> list[UnitKind | None]:
    """Unit kinds of planned appends, in order."""
    return [a.unit_kind for a in appends]
