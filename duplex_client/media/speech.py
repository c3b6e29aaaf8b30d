"""User-speech segments of a whole input signal, from Silero VAD window scores.

`detect_speech` scores every 32 ms window of 16 kHz mono audio with the Silero model
(`duplex_client.media.vad`), then:

- a window is speech when its probability is at or above `threshold`;
- runs of speech windows separated by less than `min_silence_ms` of non-speech windows are one
  segment (the hangover: a shorter pause does not end the speech);
- segments shorter than `min_speech_ms` are dropped (clicks, breaths);
- a segment starts at the start of its first speech window and ends at the end of its last one
  (not that end plus the hangover), so `end_ms` marks when the user actually stopped; both are
  media ms (0 = the first sample) and the last end is clamped to the signal's length.

The defaults (threshold 0.5, 96 ms, 250 ms) put the end of eSpeak NG speech followed by silence
within about ±50 ms of the last audible sample and bridge eSpeak's comma pauses (about 160 ms
of non-speech windows); a phrase ending in a released stop ("test") can end one window early.
The function is pure (its own model state per call; onnxruntime runs the shared session from
several threads at once), so it can run in worker threads. onnxruntime is imported when it
runs, never at import time; without it `VadUnavailable` says to install `duplex-client[vad]`.
"""

from __future__ import annotations

import math
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from duplex_client.analysis.annotations import SpeechSegment
from duplex_client.media.vad import (
    SAMPLE_RATE_HZ,
    WINDOW_MS,
    SileroSequence,
    VadUnavailable,
    load_onnxruntime,
    pcm16_to_float,
    shared_sequence_model,
)

__all__ = [
    "DEFAULT_MIN_SILENCE_MS",
    "DEFAULT_MIN_SPEECH_MS",
    "DEFAULT_THRESHOLD",
    "VadUnavailable",
    "detect_speech",
    "segments_from_probabilities",
]

DEFAULT_THRESHOLD: Final = 0.5
DEFAULT_MIN_SPEECH_MS: Final = 96
DEFAULT_MIN_SILENCE_MS: Final = 250


def _check_params(threshold: float, min_speech_ms: float, min_silence_ms: float) -> None:
    if not (isinstance(threshold, int | float) and 0.0 < threshold < 1.0):
        raise ValueError(f"threshold must be between 0 and 1 (exclusive), got {threshold!r}")
    for name, value in (("min_speech_ms", min_speech_ms), ("min_silence_ms", min_silence_ms)):
        if not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
            raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")


def segments_from_probabilities(
    probabilities: NDArray[Any] | list[float],
    *,
    threshold: float = DEFAULT_THRESHOLD,
    min_speech_ms: float = DEFAULT_MIN_SPEECH_MS,
    min_silence_ms: float = DEFAULT_MIN_SILENCE_MS,
    window_ms: float = WINDOW_MS,
    media_ms: float | None = None,
) -> list[SpeechSegment]:
    """Speech segments from per-window probabilities (window i spans `[i, i+1) * window_ms`)."""
    _check_params(threshold, min_speech_ms, min_silence_ms)
    speech = np.asarray(probabilities, dtype=np.float64) >= threshold
    runs: list[list[int]] = []  # [first window, last window] of each merged run
    for i in np.flatnonzero(speech).tolist():
        if runs and (i - runs[-1][1] - 1) * window_ms < min_silence_ms:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    out: list[SpeechSegment] = []
    for first, last in runs:
        start, end = first * window_ms, (last + 1) * window_ms
        if media_ms is not None:
            end = min(end, media_ms)
        if end - start >= min_speech_ms and end > start:
            out.append(SpeechSegment(float(start), float(end)))
    return out


def detect_speech(
    pcm: bytes | NDArray[Any],
    *,
    threshold: float = DEFAULT_THRESHOLD,
    min_speech_ms: float = DEFAULT_MIN_SPEECH_MS,
    min_silence_ms: float = DEFAULT_MIN_SILENCE_MS,
    model: SileroSequence | None = None,
) -> list[SpeechSegment]:
    """User-speech segments of 16 kHz mono audio (PCM16 bytes, int16 or float array), media ms."""
    _check_params(threshold, min_speech_ms, min_silence_ms)
    samples = pcm16_to_float(pcm)
    load_onnxruntime()  # checked on every call, even when the shared model is already loaded
    probs = (model or shared_sequence_model()).probabilities(samples)
    return segments_from_probabilities(
        probs,
        threshold=threshold,
        min_speech_ms=min_speech_ms,
        min_silence_ms=min_silence_ms,
        media_ms=len(samples) * 1000 / SAMPLE_RATE_HZ,
    )
