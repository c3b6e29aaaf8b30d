"""PCM helpers for the speech engine: input formats to float, PCM16 out.

Rate conversion is `duplex_client.media.resample`, the package's one resampler.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

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
