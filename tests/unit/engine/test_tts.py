"""eSpeak NG through espeakng-loader: PCM at the asked rate, 1 s chunks with aligned words."""

from __future__ import annotations

import numpy as np

from duplex_client.server.engine.tts import render_chunks, speech_pcm16, synthesize

TEXT = "You said: please tell me the color you see. I see red."


def test_speech_is_24_khz_pcm16_of_plausible_length() -> None:
    speech = synthesize("hello can you hear me", 24000)
    assert speech.sample_rate_hz == 24000
    assert speech.samples.dtype == np.int16
    assert 800 <= speech.duration_ms <= 4000  # five words at 140 words per minute
    rms = float(np.sqrt(np.mean(speech.samples.astype(np.float64) ** 2)))
    assert rms > 500
    assert len(speech.pcm) == 2 * len(speech.samples)


def test_rates_scale_the_sample_count_and_padding_adds_silence() -> None:
    at16 = synthesize("one two three", 16000)
    at24 = synthesize("one two three", 24000)
    assert abs(len(at24.samples) - len(at16.samples) * 1.5) <= 24
    padded = speech_pcm16("one two three", 16000, lead_ms=500, tail_ms=250)
    assert len(padded) == len(at16.pcm) + 2 * (8000 + 4000)
    assert padded[:16000] == bytes(16000)


def test_chunks_are_one_second_with_transcript_pieces_that_rebuild_the_text() -> None:
    chunks = render_chunks(TEXT, 24000, chunk_ms=1000)
    assert len(chunks) >= 3
    assert all(len(pcm) == 48000 for pcm, _ in chunks[:-1])
    assert 0 < len(chunks[-1][0]) <= 48000
    assert "".join(text for _, text in chunks) == " ".join(TEXT.split())
    assert chunks[0][1].startswith("You")
    starts = [w for w, _ in synthesize(TEXT).words]
    assert starts == TEXT.split()


def test_word_times_rise_through_the_audio() -> None:
    speech = synthesize(TEXT, 24000)
    times = [sample for _, sample in speech.words]
    assert times == sorted(times)
    assert times[-1] < len(speech.samples)
    assert times[-1] > len(speech.samples) // 2
