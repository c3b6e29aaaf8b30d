"""The package's one resampler: streaming sample-rate conversion through libswresample (PyAV).

`Resampler(in_rate, out_rate, channels)` converts a stream fed in chunks of any size: the
filter state carries over from one `process` to the next, so the output does not depend on
how the input was cut. `flush()` ends the stream. `resample()` converts a whole signal at once.
`PcmConverter` turns decoded `av.AudioFrame`s (any sample format, layout and rate) into the
framer's PCM (16 kHz mono int16) through it.

The filter (`SWR_OPTIONS`) is libswresample's Kaiser-windowed sinc with longer taps, an
earlier cutoff and a higher β than FFmpeg's defaults, which let a tone just above the new
Nyquist frequency through at about −26 dB. Here, at 48 kHz → 16 kHz, aliases are below
−130 dB and the passband is flat to 7 kHz (−9.5 dB at 7.5 kHz; benchmarks/README.md,
"Resampling"). The output is aligned with the input (sample 0 is time 0) and lags it by
about half the filter, 64–69 samples at the lower of the two rates (4.3 ms at 48 kHz →
16 kHz, 2.7 ms at 24 kHz → 48 kHz) whatever the chunk size; `flush()` gives that tail.
Samples are processed as float32; int16 output is rounded and clipped. Equal rates pass
the samples through (PCM16 exactly).

Length rule: a stream of N input frames gives, after `flush()`, exactly
`(2·N·out_rate + in_rate) // (2·in_rate)` output frames, N·out/in rounded half up. Before
the flush, the output so far never exceeds that count for the input so far.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

import numpy as np
import numpy.typing as npt

from duplex_client.framing.sources import INPUT_SAMPLE_RATE_HZ

if TYPE_CHECKING:
    from av.audio.fifo import AudioFifo
    from av.audio.frame import AudioFrame

S = TypeVar("S", np.int16, np.float32)

#: libswresample options of every conversion (FFmpeg's defaults: 32, 0.97, 9).
SWR_OPTIONS = {"filter_size": "128", "cutoff": "0.93", "kaiser_beta": "14"}
#: Half the filter, in samples at the lower rate (the output lags the input by about this).
FILTER_HALF = 64
#: Frames handed to libswresample per call (bounded memory and GIL holds for long signals).
_BLOCK = 1 << 16
_FULL_SCALE = np.float32(32768.0)


def out_frames(in_frames: int, in_rate: int, out_rate: int) -> int:
    """Output frames for `in_frames` input frames: in_frames·out/in rounded half up."""
    return (2 * in_frames * out_rate + in_rate) // (2 * in_rate)


def as_float(a: npt.NDArray[Any]) -> npt.NDArray[np.float32]:
    """Samples as float32 in [-1, 1] (integers over their full scale, unsigned centred)."""
    if a.dtype.kind not in "iu":
        return a.astype(np.float32, copy=False)
    full = float(np.iinfo(a.dtype).max) + 1.0
    x: npt.NDArray[np.floating[Any]] = a.astype(np.float32 if a.itemsize <= 2 else np.float64)
    x = x / (full / 2) - 1 if a.dtype.kind == "u" else x / full
    return x.astype(np.float32, copy=False)


def _layout(channels: int) -> str:
    return {1: "mono", 2: "stereo"}.get(channels, f"{channels}c")


class Resampler(Generic[S]):
    """Streaming rate conversion of PCM16 (or float32) frames, state kept across chunks.

    Input is bytes (little-endian samples of the output's type, channels interleaved) or an
    array: int16 is read as PCM16, floats as [-1, 1]; `(frames, channels)` or interleaved
    1-D. Output is 1-D for mono, `(frames, channels)` otherwise, in `dtype` (int16 or
    float32). After `flush()` the resampler starts a new stream.
    """

    @overload
    def __init__(self: Resampler[np.int16], in_rate: int, out_rate: int, channels: int = 1) -> None:
        pass

    @overload
    def __init__(
        self: Resampler[np.float32],
        in_rate: int,
        out_rate: int,
        channels: int = 1,
        *,
        dtype: type[np.float32],
    ) -> None:
        pass

    def __init__(
        self,
        in_rate: int,
        out_rate: int,
        channels: int = 1,
        *,
        dtype: type[np.int16] | type[np.float32] = np.int16,
    ) -> None:
        if in_rate <= 0 or out_rate <= 0:
            raise ValueError(f"sample rates must be positive, got {in_rate} → {out_rate}")
        if channels <= 0:
            raise ValueError(f"channels must be positive, got {channels}")
        self.in_rate = in_rate
        self.out_rate = out_rate
        self.channels = channels
        self.dtype: type[np.int16] | type[np.float32] = dtype
        self._swr: Any = None
        self._taken = 0  # input frames of this stream
        self._made = 0  # output frames of this stream

    def process(self, pcm: bytes | npt.NDArray[Any]) -> npt.NDArray[S]:
        """Resample the next chunk; returns the output it completes (possibly none)."""
        x = self._frames(pcm)
        self._taken += len(x)
        if self.in_rate == self.out_rate:
            return self._give(x)
        pieces = [self._run(x[i : i + _BLOCK]) for i in range(0, len(x), _BLOCK)]
        return self._give(np.concatenate(pieces) if pieces else x)

    def flush(self) -> npt.NDArray[S]:
        """The end of the stream: the filter's tail, making the length exact (see the module)."""
        want = out_frames(self._taken, self.in_rate, self.out_rate) - self._made
        tail = np.zeros((0, self.channels), np.float32)
        if self._swr is not None:  # zeros push the filter's tail out; the excess is cut
            pad = -(-2 * FILTER_HALF * self.in_rate // min(self.in_rate, self.out_rate))
            tail = np.concatenate(
                [self._run(np.zeros((pad, self.channels), np.float32)), self._run(None)]
            )
        if len(tail) < want:
            tail = np.concatenate([tail, np.zeros((want - len(tail), self.channels), np.float32)])
        out = self._give(tail[: max(0, want)])
        self._swr, self._taken, self._made = None, 0, 0
        return out

    def _frames(self, pcm: bytes | npt.NDArray[Any]) -> npt.NDArray[np.float32]:
        """The input as float32 `(frames, channels)` in [-1, 1]."""
        if isinstance(pcm, bytes | bytearray | memoryview):
            kind = "<i2" if self.dtype is np.int16 else "<f4"
            size = np.dtype(kind).itemsize * self.channels
            if len(pcm) % size:
                raise ValueError(f"chunks must hold whole frames of {size} bytes")
            pcm = np.frombuffer(pcm, dtype=kind)
        x = as_float(np.asarray(pcm))
        if x.ndim == 2 and x.shape[1] != self.channels:
            raise ValueError(f"expected {self.channels} channels, got {x.shape[1]}")
        if x.size % self.channels:
            raise ValueError(f"expected whole frames of {self.channels} channels")
        return x.reshape(-1, self.channels)

    def _run(self, x: npt.NDArray[np.float32] | None) -> npt.NDArray[np.float32]:
        import av

        layout = _layout(self.channels)
        if self._swr is None:
            if x is None:
                return np.zeros((0, self.channels), np.float32)
            self._swr = av.AudioResampler(
                format="flt", layout=layout, rate=self.out_rate, options=SWR_OPTIONS
            )
        frame = None
        if x is not None:
            if not len(x):
                return np.zeros((0, self.channels), np.float32)
            frame = av.AudioFrame.from_ndarray(
                np.ascontiguousarray(x).reshape(1, -1), format="flt", layout=layout
            )
            frame.sample_rate = self.in_rate
            frame.pts = None
        out = [f.to_ndarray().reshape(-1, self.channels) for f in self._swr.resample(frame)]
        return np.concatenate(out) if out else np.zeros((0, self.channels), np.float32)

    def _give(self, y: npt.NDArray[np.float32]) -> npt.NDArray[S]:
        """Output in `dtype`, counted."""
        self._made += len(y)
        if self.channels == 1:
            y = y.reshape(-1)
        if self.dtype is np.float32:
            out: npt.NDArray[Any] = np.ascontiguousarray(y, dtype=np.float32)
        else:
            out = np.clip(np.rint(y * _FULL_SCALE), -32768, 32767).astype(np.int16)
        return out


@overload
def resample(
    samples: npt.NDArray[np.float32], in_rate: int, out_rate: int, channels: int = 1
) -> npt.NDArray[np.float32]:
    pass


@overload
def resample(
    samples: npt.NDArray[np.int16] | bytes, in_rate: int, out_rate: int, channels: int = 1
) -> npt.NDArray[np.int16]:
    pass


def resample(
    samples: npt.NDArray[Any] | bytes, in_rate: int, out_rate: int, channels: int = 1
) -> npt.NDArray[Any]:
    """A whole signal at `out_rate`: float32 stays float32, PCM16 (array or bytes) int16."""
    if isinstance(samples, np.ndarray) and samples.dtype.kind == "f":
        floats = Resampler(in_rate, out_rate, channels, dtype=np.float32)
        return np.concatenate([floats.process(samples), floats.flush()])
    pcm = Resampler(in_rate, out_rate, channels)
    return np.concatenate([pcm.process(samples), pcm.flush()])


def frame_samples(frame: AudioFrame) -> npt.NDArray[np.float32]:
    """A decoded frame as float32 mono in [-1, 1] (any sample format; channels averaged)."""
    data = frame.to_ndarray()
    channels = len(frame.layout.channels)
    planar = frame.format.is_planar
    x = as_float(data.reshape(channels, -1) if planar else data.reshape(-1, channels))
    if channels == 1:
        mono: npt.NDArray[np.float32] = x.reshape(-1)
    else:
        mono = x.sum(axis=0 if planar else 1, dtype=np.float32) / np.float32(channels)
    return mono


class PcmConverter:
    """Push decoded `AudioFrame`s, get mono LE PCM bytes; `flush()` at the end.

    The output is 16 kHz int16 unless `rate` / `float32` ask for another rate or float32.

    Frames are gathered in an `av.AudioFifo` and converted about `batch_seconds` at a time:
    one array and one resampler call per batch instead of per small decoded frame. A change
    of sample format or layout starts a new batch; a change of rate also ends the old stream
    (its tail is flushed) and starts a new one.
    """

    def __init__(
        self, batch_seconds: float = 1.0, *, rate: int = INPUT_SAMPLE_RATE_HZ, float32: bool = False
    ) -> None:
        self._batch_seconds = batch_seconds
        self._rate = rate
        self._kind = "<f4" if float32 else "<i2"
        self._fifo: AudioFifo | None = None
        self._resampler: Resampler[Any] | None = None
        self._batch = 0

    def push(self, frame: AudioFrame) -> bytes:
        """Queue one frame; returns whatever PCM a full batch produced (often b"")."""
        import av

        out = b""
        frame.pts = None
        if self._fifo is not None:
            try:
                self._fifo.write(frame)
            except ValueError:  # format, layout or rate changed: convert what is queued
                out = self._drain()
                self._fifo = None
        if self._resampler is not None and self._resampler.in_rate != frame.sample_rate:
            out += self.flush()
        if self._resampler is None:
            rate_in = frame.sample_rate
            self._resampler = (
                Resampler(rate_in, self._rate, dtype=np.float32)
                if self._kind == "<f4"
                else Resampler(rate_in, self._rate)
            )
            self._batch = max(1, round(frame.sample_rate * self._batch_seconds))
        if self._fifo is None:
            self._fifo = av.AudioFifo()
            self._fifo.write(frame)
        if self._fifo.samples >= self._batch:
            out += self._drain()
        return out

    def flush(self) -> bytes:
        """Everything still queued, and the resampler's tail."""
        if self._resampler is None:
            return b""
        out = self._drain() + self._resampler.flush().astype(self._kind).tobytes()
        self._fifo = self._resampler = None
        return out

    def _drain(self) -> bytes:
        batch = self._fifo.read() if self._fifo is not None and self._fifo.samples else None
        if batch is None or self._resampler is None:
            return b""
        pcm = self._resampler.process(frame_samples(batch))
        out: bytes = pcm.astype(self._kind).tobytes()
        return out
