"""The recorded input is the input, whatever the session's sample format (issue 32, point 1).

The same speech is streamed in real time with one preset per input format the families use
(16 kHz `pcm16`, 24 kHz `pcm_f32le`) to the reference server (scripted engine: it answers
500 ms after the unit holding the end of the speech). The input channel of
`conversation.wav` must be that speech (correlation above 0.99), and voice activity must find
it, so the turn's latency is measured.
"""

from __future__ import annotations

import wave
from pathlib import Path

import numpy as np
import pytest

from duplex_client.bundle.wavfile import read_wav_int16
from duplex_client.families import FAMILIES, ModelFamily
from duplex_client.media.resample import resample
from duplex_client.run.stream import stream_clip
from duplex_client.server import ReferenceServer, Script
from duplex_client.server.config import speech_available
from tests.integration.live.helpers import write_wav
from tests.support.media_files import best_correlation

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not speech_available(), reason="needs eSpeak NG and onnxruntime"),
]


def _one_per_input_format() -> dict[str, ModelFamily]:
    out: dict[str, ModelFamily] = {}
    for f in FAMILIES:
        out.setdefault(f"{f.input_format}@{f.input_rate_hz}", f)
    return out


FORMATS = _one_per_input_format()


def test_the_families_use_two_input_formats() -> None:
    """If a family adds a format, the parametrisation below covers it by construction."""
    assert set(FORMATS) >= {"pcm16@16000", "pcm_f32le@24000"}


@pytest.mark.parametrize("fmt", list(FORMATS))
async def test_the_recorded_input_is_the_speech_sent_in_every_format(
    tmp_path: Path, fmt: str
) -> None:
    from duplex_client.server.engine.tts import speech_pcm16

    family = FORMATS[fmt]
    speech = speech_pcm16("what colour do you see", 16000, lead_ms=300, tail_ms=0)
    source = np.frombuffer(speech, dtype="<i2")
    audible = np.flatnonzero(np.abs(source) > 0.01 * np.abs(source).max())
    true_end = (int(audible[-1]) + 1) / 16
    wav = write_wav(tmp_path / "q.wav", speech + bytes(2 * 16 * 1500), rate=16000)
    closing_unit = int(true_end // family.chunk_period_ms)
    script = Script.from_dict(
        {
            "rules": [
                {
                    "on": "unit",
                    "index": closing_unit,
                    "do": "speak",
                    "delay_ms": 500,
                    "text": "yes",
                    "audio_ms": 300,
                }
            ],
            "defaults": {"commit": {"do": "listen"}},
        }
    )
    profile = family.name
    async with ReferenceServer(profile=profile, engine="scripted", script=script) as server:
        result = await stream_clip(
            server.url, input_audio=str(wav), preset=family.name, output_dir=tmp_path / "run"
        )
    assert result.ok, result.error
    assert result.timeline is not None
    assert result.timeline["input_format"]["encoding"] == family.input_format
    # The input channel of conversation.wav is the source speech (at the answers' rate).
    mix = read_wav_int16(tmp_path / "run" / "conversation.wav")
    with wave.open(str(tmp_path / "run" / "conversation.wav")) as w:
        rate = w.getframerate()
    assert rate == family.output_rate_hz
    left = mix[:, 0].astype(np.float64) / 32768
    ref = resample(source, 16000, rate).astype(np.float64) / 32768
    n = min(len(left), len(ref))
    corr, lag = best_correlation(left[:n], ref[:n], max_lag=rate // 100)
    assert corr > 0.99, (fmt, corr, lag)
    assert 0.9 < np.abs(left[:n]).max() / np.abs(ref[:n]).max() < 1.1
    # Voice activity found the speech, so the answer has a latency.
    assert result.turns, result.warnings
    turn = result.turns[0]
    assert turn.user_end_source == "vad", turn
    assert turn.user_end_ms is not None and abs(turn.user_end_ms - true_end) <= 100
    assert turn.latency_ms is not None and turn.latency_ms > 0
