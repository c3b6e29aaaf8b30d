"""The PCM the framer cuts and sends: the session's input encoding and rate (protocol.md §2.1)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

#: Bytes per sample of the encodings the framer can send.
SAMPLE_WIDTHS = {"pcm16": 2, "pcm_s16le": 2, "s16le": 2, "pcm_f32le": 4}


@dataclass(frozen=True, slots=True)
class PcmFormat:
    """Mono little-endian PCM: `pcm16` (int16) or `pcm_f32le` (float32) at `sample_rate_hz`."""

    encoding: str = "pcm16"
    sample_rate_hz: int = 16000

    def __post_init__(self) -> None:
        if self.encoding not in SAMPLE_WIDTHS:
            raise ValueError(f"unsupported input encoding {self.encoding!r}")
        if self.sample_rate_hz <= 0:
            raise ValueError(f"sample_rate_hz must be positive, got {self.sample_rate_hz}")

    @property
    def sample_width(self) -> int:
        """Bytes per sample."""
        return SAMPLE_WIDTHS[self.encoding]

    @property
    def is_float(self) -> bool:
        """Whether samples are float32 (else int16)."""
        return self.sample_width == 4

    def to_dict(self) -> dict[str, Any]:
        """The timeline's `input_format` object."""
        return {"encoding": self.encoding, "sample_rate_hz": self.sample_rate_hz, "channels": 1}


#: The framer's default: 16 kHz int16, what every source produces unless told otherwise.
DEFAULT_PCM = PcmFormat()


@runtime_checkable
class Retargetable(Protocol):
    """A PCM source that can decode straight to another format (`media` file sources)."""

    def set_output(self, fmt: PcmFormat) -> None:
        """Produce `fmt` from now on (before `chunks()` is first called)."""
        ...


@runtime_checkable
class HasSessionFormat(Protocol):
    """A stream target that knows its session's input format (`DuplexClient`)."""

    @property
    def input_pcm_format(self) -> PcmFormat:
        """The session's input encoding and rate."""
        ...
