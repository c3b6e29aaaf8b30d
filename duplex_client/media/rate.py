"""One-shot PCM16 mono rate conversion through PyAV's resampler (libswresample)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

#: Samples per frame handed to the resampler (bounded memory for hours of audio).
_BLOCK = 1 << 16


def resample_pcm16(pcm: npt.NDArray[np.int16], from_hz: int, to_hz: int) -> npt.NDArray[np.int16]:
    """`pcm` at `to_hz`, exactly `len(pcm) * to_hz // from_hz` samples, aligned at sample 0."""
    import av
    import numpy as np

    if from_hz <= 0 or to_hz <= 0:
        raise ValueError(f"sample rates must be positive, got {from_hz} → {to_hz}")
    want = len(pcm) * to_hz // from_hz
    if from_hz == to_hz or not len(pcm):
        return np.array(pcm[:want], dtype=np.int16)
    resampler = av.AudioResampler(format="s16", layout="mono", rate=to_hz)
    pieces: list[npt.NDArray[np.int16]] = []
    for start in range(0, len(pcm), _BLOCK):
        block = np.ascontiguousarray(pcm[start : start + _BLOCK], dtype=np.int16)
        frame = av.AudioFrame.from_ndarray(block[None, :], format="s16", layout="mono")
        frame.sample_rate = from_hz
        pieces += [f.to_ndarray().reshape(-1).astype(np.int16) for f in resampler.resample(frame)]
    pieces += [f.to_ndarray().reshape(-1).astype(np.int16) for f in resampler.resample(None)]
    out = np.concatenate(pieces).astype(np.int16) if pieces else np.zeros(0, np.int16)
    if len(out) < want:
        out = np.concatenate([out, np.zeros(want - len(out), dtype=np.int16)])
    return out[:want]
