"""Silero VAD on onnxruntime: speech spans of real (synthesised) speech, noise rejected."""

from __future__ import annotations

import numpy as np

from duplex_client.media.resample import resample
from duplex_client.server.engine.pcm import to_float, to_pcm16
from duplex_client.server.engine.tts import speech_pcm16
from duplex_client.server.engine.vad import (
    WINDOW_MS,
    SpeechTracker,
    VadParams,
    VoiceActivityDetector,
    speech_segments,
)

SENTENCE = "please tell me the color you see"


def _padded_sentence() -> tuple[np.ndarray, int, int]:
    speech = to_float(speech_pcm16(SENTENCE, 16000))
    lead, tail = np.zeros(16000, np.float32), np.zeros(24000, np.float32)
    return np.concatenate([lead, speech, tail]), 1000, 1000 + len(speech) * 1000 // 16000


def test_finds_the_speech_span_of_a_sentence_padded_with_silence() -> None:
    signal, start_ms, end_ms = _padded_sentence()
    spans = speech_segments(signal)
    assert len(spans) == 1
    found_start, found_end = spans[0]
    assert start_ms - 100 <= found_start <= start_ms + 400
    assert end_ms - 600 <= found_end <= end_ms + 200


def test_ignores_white_noise_and_silence() -> None:
    rng = np.random.default_rng(7)
    noise = (rng.standard_normal(3 * 16000) * 0.1).astype(np.float32)
    assert speech_segments(noise) == []
    assert speech_segments(np.zeros(2 * 16000, np.float32)) == []


def test_detector_streams_input_rate_pcm_and_reports_start_then_stop() -> None:
    signal, start_ms, _ = _padded_sentence()
    pcm48 = to_pcm16(resample(signal, 16000, 48000))
    vad = VoiceActivityDetector(input_rate_hz=48000, input_format="pcm16")
    step = 48000 * 2 // 5  # 200 ms appends
    events = []
    for i in range(0, len(pcm48), step):
        events.extend(vad.push(pcm48[i : i + step]).events)
    assert [e.kind for e in events] == ["start", "stop"]
    assert abs(events[0].at_ms - start_ms) <= 400
    assert not vad.in_speech


def test_unit_scores_separate_speech_from_silence() -> None:
    vad = VoiceActivityDetector()
    silent = vad.push(bytes(32000))
    spoken = vad.push(speech_pcm16(SENTENCE, 16000))
    assert silent.max_probability < 0.2
    assert spoken.max_probability > 0.8


def test_tracker_needs_min_speech_and_waits_for_the_hangover() -> None:
    tracker = SpeechTracker(VadParams(threshold=0.5, min_speech_ms=96, silence_ms=320))
    blip = np.array([0.9, 0.9, 0.1, 0.1], np.float32)  # 64 ms: too short to start
    assert tracker.feed(blip) == []
    talk = np.array([0.9] * 5 + [0.1] * 3 + [0.9] * 2, np.float32)  # a 96 ms dip: still speech
    events = tracker.feed(talk)
    assert [e.kind for e in events] == ["start"]
    assert events[0].at_ms == 4 * WINDOW_MS
    stop = tracker.feed(np.full(12, 0.05, np.float32))
    assert [e.kind for e in stop] == ["stop"]
    assert stop[0].at_ms == 14 * WINDOW_MS  # where the silence began, not where it was confirmed
    assert not tracker.in_speech
