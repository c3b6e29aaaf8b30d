"""PcmConverter: any decoded audio to 16 kHz mono int16, across format changes."""

from __future__ import annotations

import numpy as np
import pytest

from duplex_client.media.resample import PcmConverter
from tests.support.media_files import dominant_hz, tone

av = pytest.importorskip("av")


def frames(seconds: float, rate: int, hz: float, layout: str, size: int = 1024) -> list:
    channels = 2 if layout == "stereo" else 1
    pcm = tone(seconds, rate, hz, channels)
    out = []
    for i in range(0, pcm.shape[1], size):
        frame = av.AudioFrame.from_ndarray(
            np.ascontiguousarray(pcm[:, i : i + size]), format="fltp", layout=layout
        )
        frame.sample_rate, frame.pts = rate, i
        out.append(frame)
    return out


def test_format_change_mid_stream_keeps_all_audio() -> None:
    converter = PcmConverter()
    first = b"".join(converter.push(f) for f in frames(1.0, 48000, 500.0, "stereo"))
    second = b"".join(converter.push(f) for f in frames(1.0, 22050, 700.0, "mono"))
    pcm = first + second + converter.flush()
    assert abs(len(pcm) / 2 - 32000) <= 64
    half = len(pcm) // 2 // 2 * 2
    assert abs(dominant_hz(pcm[: half - 2000]) - 500) < 5
    assert abs(dominant_hz(pcm[half + 2000 :]) - 700) < 5


def test_output_comes_in_batches_and_flush_empties() -> None:
    converter = PcmConverter(batch_seconds=0.5)
    outputs = [converter.push(f) for f in frames(2.0, 16000, 440.0, "mono", size=160)]
    assert sum(1 for o in outputs if o) == 4  # one batch per half second
    assert converter.flush() == b""  # nothing left after exact batches (no rate change)
