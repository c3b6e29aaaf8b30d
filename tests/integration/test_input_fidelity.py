"""Input fidelity end to end: what reaches the server is the WAV's audio, whatever its format.

Each WAV kind is streamed by `stream_clip` (asap pacing) to an in-process reference server
(scripted engine). The PCM the server's unit assembler accepts is captured and compared with
the source's two-tone signal computed analytically at 16 kHz, and the run's timeline must say
what the file was and what was done to it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from duplex_client.framing import check_timeline
from duplex_client.media import open_audio
from duplex_client.run.stream import stream_clip
from duplex_client.server import ReferenceServer
from tests.support.media_files import best_correlation, two_tone_mono, write_two_tone_wav

SECONDS = 1.5
MAX_LAG = 5 * 16  # 5 ms at 16 kHz: the resampler's delay stays well within it


def _converted(fmt: str) -> dict[str, Any]:
    return {"step": "converted", "from": fmt, "to": "pcm16"}


DOWNMIXED = {"step": "downmixed", "from": 2, "to": 1}
RESAMPLED_48K = {"step": "resampled", "from": 48000, "to": 16000}
#: (libsndfile subtype, rate, channels, original sample_format, expected conversions)
KINDS = {
    "float32": ("FLOAT", 16000, 1, "float32", [_converted("float32")]),
    "float64": ("DOUBLE", 16000, 1, "float64", [_converted("float64")]),
    "pcm8u": ("PCM_U8", 16000, 1, "pcm8u", [_converted("pcm8u")]),
    "pcm24": ("PCM_24", 16000, 1, "pcm24", [_converted("pcm24")]),
    "stereo_pcm16": ("PCM_16", 16000, 2, "pcm16", [DOWNMIXED]),
    "48k_pcm16": ("PCM_16", 48000, 1, "pcm16", [RESAMPLED_48K]),
    "48k_stereo_float32": (
        "FLOAT", 48000, 2, "float32", [_converted("float32"), DOWNMIXED, RESAMPLED_48K],
    ),
}  # fmt: skip


@pytest.mark.parametrize("kind", list(KINDS))
async def test_the_server_receives_the_wav_faithfully(
    tmp_path: Path, received: list[bytes], kind: str
) -> None:
    subtype, rate, channels, sample_format, conversions = KINDS[kind]
    wav = write_two_tone_wav(
        tmp_path / f"{kind}.wav", rate=rate, channels=channels, subtype=subtype, seconds=SECONDS
    )
    async with ReferenceServer(profile="minicpmo", engine="scripted") as server:
        result = await stream_clip(
            server.url,
            input_audio=str(wav),
            tail_silence_s=0,
            realtime=False,
            output_dir=tmp_path / "run",
        )
    assert result.ok, result.error
    pcm = b"".join(received)
    # The server got exactly what the source decoded, nothing added or dropped ...
    assert pcm == b"".join(open_audio(wav).chunks())
    got = np.frombuffer(pcm, "<i2").astype(np.float64) / 32768
    assert abs(len(got) - SECONDS * 16000) <= MAX_LAG, len(got)
    assert np.abs(got).max() > 0.4  # the mix peaks near half scale; the old bug sent zeros
    # ... and that is the file's signal at 16 kHz mono, at the right level.
    ref = two_tone_mono(len(got))
    corr, lag = best_correlation(got, ref, MAX_LAG)
    assert corr > 0.99, (corr, lag)
    level = np.sqrt(np.mean(got[MAX_LAG:-MAX_LAG] ** 2) / np.mean(ref**2))
    assert 0.9 < level < 1.1, level

    timeline = result.timeline
    assert timeline is not None
    source = timeline["audio_source"]
    assert source["kind"] == "wav"
    assert source["original_format"] == {
        "sample_rate_hz": rate,
        "channels": channels,
        "sample_format": sample_format,
    }
    assert source["conversions"] == conversions
    assert check_timeline(timeline) == []
    on_disk = json.loads((tmp_path / "run" / "input_timeline.json").read_text())
    assert on_disk["audio_source"] == source
