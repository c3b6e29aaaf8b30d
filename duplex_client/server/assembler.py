"""Unit assembly: accepted audio, in arrival order, cut into units on the grid (§3.1)."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, replace

import numpy as np

from duplex_client.framing.units import UnitGrid, samples_to_ms
from duplex_client.protocol.capabilities import UnitKind
from duplex_client.server.engine.base import UnitView

#: RMS above which un-hinted PCM counts as speech (about -40 dBFS).
SPEECH_RMS_PCM16 = 330.0
SPEECH_RMS_F32 = 0.01


def detect_speech(pcm: bytes, input_format: str) -> bool:
    """A plain RMS gate, used only when the client sent no `is_speech` hint."""
    if input_format == "pcm_f32le":
        x = np.frombuffer(pcm, dtype="<f4")
        threshold = SPEECH_RMS_F32
    else:
        x = np.frombuffer(pcm, dtype="<i2").astype(np.float32)
        threshold = SPEECH_RMS_PCM16
    if not len(x):
        return False
    # A float32 dot product: one pass, 4x cheaper than mean(x * x) in float64 on every append.
    return float(np.dot(x, x)) > threshold * threshold * len(x)


@dataclass(frozen=True, slots=True)
class FramePack:
    """One append's images: bare base64 strings and the sha256 of each decoded image."""

    frames: tuple[str, ...]
    sha256: tuple[str, ...]

    @property
    def chars(self) -> int:
        """Base64 characters held (what counts toward the pending-input limit)."""
        return sum(len(f) for f in self.frames)

    @property
    def count(self) -> int:
        """Images in the pack (one digest each, also once the images are let go)."""
        return len(self.sha256)


@dataclass(frozen=True, slots=True)
class Unit:
    """One whole model input unit, as emitted to the engine."""

    unit_index: int
    kind: UnitKind
    audio_unit_index: int | None
    pcm: bytes
    frames: FramePack | None
    speech: bool
    audio_start_ms: int
    audio_end_ms: int
    padded_ms: int = 0
    charge: int = 0
    sample_rate_hz: int = 16000
    bytes_per_sample: int = 2

    @property
    def frame_count(self) -> int:
        """Images in the unit."""
        return self.frames.count if self.frames else 0

    def without_images(self) -> Unit:
        """The unit with its images' digests but not the images (its PCM and labels kept)."""
        if self.frames is None or not self.frames.frames:
            return self
        return replace(self, frames=FramePack(frames=(), sha256=self.frames.sha256))

    def view(self) -> UnitView:
        """The engine's view of the unit."""
        return UnitView(
            unit_index=self.unit_index,
            kind=self.kind,
            audio_unit_index=self.audio_unit_index,
            speech=self.speech,
            duration_ms=self.audio_end_ms - self.audio_start_ms + self.padded_ms,
            frames=self.frame_count,
            pcm=self.pcm,
            sample_rate_hz=self.sample_rate_hz,
            bytes_per_sample=self.bytes_per_sample,
            images=self.frames.frames if self.frames else (),
        )

    def metadata(self) -> dict[str, object]:
        """`unit_index`, `unit_kind`, `audio_unit_index` for response metadata (§3.1)."""
        return {
            "unit_index": self.unit_index,
            "unit_kind": self.kind.value,
            "audio_unit_index": self.audio_unit_index,
        }


class UnitAssembler:
    """Buffers accepted PCM and queued frame groups; emits whole units on the grid."""

    def __init__(self, grid: UnitGrid, bytes_per_sample: int) -> None:
        self.grid = grid
        self.bps = bytes_per_sample
        self.next_unit_index = 0
        self.next_audio_unit = 0
        self.cumulative_samples = 0
        self._unit_start = 0
        self._partial = bytearray()
        self._partial_speech = False
        self._frames: deque[FramePack] = deque()

    @property
    def pending_bytes(self) -> int:
        """Buffered PCM bytes plus queued frame base64 characters."""
        return len(self._partial) + sum(f.chars for f in self._frames)

    @property
    def partial_bytes(self) -> int:
        """PCM bytes of the open, partly filled unit."""
        return len(self._partial)

    @property
    def queued_frames(self) -> int:
        """Frame groups waiting for a unit."""
        return len(self._frames)

    @property
    def audio_end_ms(self) -> int:
        """Cumulative accepted audio, rounded to ms."""
        return self.to_ms(self.cumulative_samples)

    def to_ms(self, samples: int) -> int:
        """Samples → whole ms (the framing layer's rounding)."""
        return samples_to_ms(samples, self.grid.sample_rate_hz)

    def unit_samples(self, audio_unit_index: int) -> int:
        """Length of an audio unit in samples (the first unit is `first_unit_ms` long)."""
        k = audio_unit_index
        return self.grid.boundary_samples(k) - (self.grid.boundary_samples(k - 1) if k > 0 else 0)

    def closes_unit(self, pcm_len: int) -> bool:
        """Whether `pcm_len` more bytes would close the open unit."""
        need = self.unit_samples(self.next_audio_unit) * self.bps - len(self._partial)
        return pcm_len >= need

    def add_audio(self, pcm: bytes, speech: bool, frames: FramePack | None) -> list[Unit]:
        """Buffer one append's PCM (and frames); return the units it closed.

        Frames wait for the next unit to close; newer frames replace any still waiting, so
        a unit never carries an image older than one sent after it (a client whose grid
        lagged a server commit may have sent frames on an append that closed nothing).
        """
        if frames is not None:
            self._frames.clear()
            self._frames.append(frames)
        units: list[Unit] = []
        view = memoryview(pcm)
        while view:
            need = self.unit_samples(self.next_audio_unit) * self.bps - len(self._partial)
            take = view[:need]
            view = view[need:]
            self._partial += take
            self._partial_speech = self._partial_speech or speech
            self.cumulative_samples += len(take) // self.bps
            if len(take) == need:
                units.append(self._close(padded_samples=0))
        return units

    def add_vision(self, frames: FramePack) -> Unit:
        """A frame-only append: a whole VISION unit by itself."""
        unit = Unit(
            unit_index=self.next_unit_index,
            kind=UnitKind.VISION,
            audio_unit_index=None,
            pcm=b"",
            frames=frames,
            speech=False,
            audio_start_ms=self.audio_end_ms,
            audio_end_ms=self.audio_end_ms,
            charge=frames.chars,
            sample_rate_hz=self.grid.sample_rate_hz,
            bytes_per_sample=self.bps,
        )
        self.next_unit_index += 1
        return unit

    def flush(self) -> Unit | None:
        """A final commit: close the partial unit early, zero-padded; the grid re-anchors here."""
        if not self._partial:
            self._unit_start = self.cumulative_samples
            return None
        missing = self.unit_samples(self.next_audio_unit) * self.bps - len(self._partial)
        return self._close(padded_samples=missing // self.bps)

    def clear(self) -> int:
        """Drop buffered PCM and queued frames; returns the bytes released."""
        released = self.pending_bytes
        self._partial.clear()
        self._partial_speech = False
        self._frames.clear()
        self._unit_start = self.cumulative_samples
        return released

    def _close(self, padded_samples: int) -> Unit:
        frames = self._frames.popleft() if self._frames else None
        real = bytes(self._partial)
        unit = Unit(
            unit_index=self.next_unit_index,
            kind=UnitKind.OMNI if frames else UnitKind.AUDIO,
            audio_unit_index=self.next_audio_unit,
            pcm=real + bytes(padded_samples * self.bps),
            frames=frames,
            speech=self._partial_speech,
            audio_start_ms=self.to_ms(self._unit_start),
            audio_end_ms=self.to_ms(self.cumulative_samples),
            padded_ms=self.to_ms(padded_samples),
            charge=len(real) + (frames.chars if frames else 0),
            sample_rate_hz=self.grid.sample_rate_hz,
            bytes_per_sample=self.bps,
        )
        self.next_unit_index += 1
        self.next_audio_unit += 1
        self._partial.clear()
        self._partial_speech = False
        self._unit_start = self.cumulative_samples
        return unit
