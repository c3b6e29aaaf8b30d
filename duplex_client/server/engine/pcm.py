"""PCM helpers for the speech engine: input formats to float, PCM16 out, resampling (PyAV)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    from av.audio.resampler import AudioResampler

Samples = NDArray[np.float32]

#: The rate VAD and ASR work at.
MODEL_RATE_HZ = 16000


def to_float(pcm: bytes, input_format: str = "pcm16") -> Samples:
    """Mono PCM bytes (`pcm16` or `pcm_f32le`, little-endian) as float32 in [-1, 1]."""
    if input_format == "pcm_f32le":
        return np.frombuffer(pcm, dtype="<f4").astype(np.float32)
    return np.frombuffer(pcm, dtype="<i2").astype(np.float32) / np.float32(32768.0)


def to_pcm16(samples: NDArray[Any]) -> bytes:
    """Float samples in [-1, 1] (clipped) as PCM16 LE bytes; int16 arrays pass through."""
    if samples.dtype == np.int16:
        return samples.astype("<i2").tobytes()
    scaled = np.clip(np.asarray(samples, dtype=np.float64) * 32768.0, -32768, 32767)
    return np.round(scaled).astype("<i2").tobytes()


class StreamResampler:
    """Converts a float32 stream from one rate to another, keeping filter state across pushes."""

    def __init__(self, src_hz: int, dst_hz: int) -> None:
        self.src_hz = src_hz
        self.dst_hz = dst_hz
        self._resampler: AudioResampler | None = None

    def push(self, samples: Samples) -> Samples:
        """Resample the next piece; the output lags the input by the filter delay."""
        if self.src_hz == self.dst_hz:
            return samples.astype(np.float32, copy=False)
        if not len(samples):
            return np.zeros(0, dtype=np.float32)
        return self._run(samples)

    def flush(self) -> Samples:
        """The filter's tail (call once, at the end of the stream)."""
        if self.src_hz == self.dst_hz or self._resampler is None:
            return np.zeros(0, dtype=np.float32)
        return self._run(None)

    def _run(self, samples: Samples | None) -> Samples:
        import av

        if self._resampler is None:
            self._resampler = av.AudioResampler(format="flt", layout="mono", rate=self.dst_hz)
        frame = None
        if samples is not None:
            frame = av.AudioFrame.from_ndarray(
                np.ascontiguousarray(samples, dtype=np.float32)[None, :],
                format="flt",
                layout="mono",
            )
            frame.sample_rate = self.src_hz
            frame.pts = None
        out = [f.to_ndarray()[0] for f in self._resampler.resample(frame)]
        if not out:
            return np.zeros(0, dtype=np.float32)
        return np.concatenate(out).astype(np.float32, copy=False)


def resample(samples: Samples, src_hz: int, dst_hz: int) -> Samples:
    """One-shot rate conversion of a whole signal (output length ≈ len · dst / src)."""
    if src_hz == dst_hz:
        return samples.astype(np.float32, copy=False)
    stream = StreamResampler(src_hz, dst_hz)
    out = np.concatenate([stream.push(samples), stream.flush()])
    expected = round(len(samples) * dst_hz / src_hz)
    if len(out) < expected:
        out = np.concatenate([out, np.zeros(expected - len(out), dtype=np.float32)])
    return out[:expected]
