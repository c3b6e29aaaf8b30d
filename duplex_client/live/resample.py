"""Answer audio at another rate than the speaker's: a streaming PCM16 resampler (sans-I/O)."""

from __future__ import annotations

import numpy as np


class StreamResampler:
    """Linear-interpolation PCM16 mono resampler fed a stream in chunks of any size.

    The output does not depend on how the input was cut: the fractional read position and
    the source samples still needed for interpolation carry over from one `push` to the next.
    Linear interpolation is enough for speech played to a person; it is not meant for analysis.
    """

    def __init__(self, source_hz: int, target_hz: int) -> None:
        if source_hz <= 0 or target_hz <= 0:
            raise ValueError("sample rates must be positive")
        self.source_hz = source_hz
        self.target_hz = target_hz
        self._step = source_hz / target_hz  # source samples per output sample
        self._pos = 0.0  # source position of the next output sample, within `_held`
        self._held = np.zeros(0, dtype=np.float32)
        self._taken = 0  # source samples pushed
        self._made = 0  # output samples returned

    def push(self, pcm: bytes) -> bytes:
        """Resample the next chunk (whole PCM16 samples); returns what can be produced now."""
        if len(pcm) % 2:
            raise ValueError("PCM16 chunks must hold whole samples")
        x = np.concatenate([self._held, np.frombuffer(pcm, dtype="<i2").astype(np.float32)])
        self._taken += len(pcm) // 2
        last = len(x) - 1
        if last < 1 or self._pos > last:
            self._held = x
            return b""
        count = int((last - self._pos) // self._step) + 1
        t = self._pos + np.arange(count) * self._step
        i = t.astype(np.int64)
        frac = (t - i).astype(np.float32)
        y = x[i] + (x[np.minimum(i + 1, last)] - x[i]) * frac
        following = self._pos + count * self._step
        keep = min(int(following), last)  # the next output needs x[keep] and after
        self._held = x[keep:]
        self._pos = following - keep
        self._made += count
        out: bytes = np.clip(np.rint(y), -32768, 32767).astype("<i2").tobytes()
        return out

    def flush(self) -> bytes:
        """The end of the stream: the last output samples, so the duration comes out exact."""
        want = round(self._taken * self.target_hz / self.source_hz) - self._made
        if want <= 0 or not len(self._held):
            return b""
        self._made += want
        return np.full(want, np.rint(self._held[-1]), dtype="<i2").tobytes()
