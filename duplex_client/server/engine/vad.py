"""Voice activity: Silero VAD window scores, and speech start/stop with hangover.

The model wrapper (`SileroModel`, `VadStream`, the process-wide `shared_model`) lives in
`duplex_client.media.vad`, shared with the client's offline speech segments, and is re-exported
here. The model (MIT, see `models/LICENSE-silero-vad`) scores 32 ms windows of 16 kHz audio;
each window is fed with the previous window's last 64 samples as context and the recurrent
state carried over. `SpeechTracker` turns the scores into speech start/stop events: speech starts
after `min_speech_ms` of windows at or above `threshold` and stops once the score stayed below
`threshold - 0.15` for `silence_ms` (the hangover).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from duplex_client.media.resample import Resampler
from duplex_client.media.vad import (
    CONTEXT_SAMPLES,
    MODEL_PATH,
    WINDOW_MS,
    WINDOW_SAMPLES,
    SileroModel,
    VadStream,
    VadUnavailable,
    shared_model,
)
from duplex_client.server.engine.pcm import MODEL_RATE_HZ, Samples, to_float

#: The server's name for `duplex_client.media.vad.VadUnavailable` (onnxruntime or model missing).
VadUnavailableError = VadUnavailable

__all__ = [
    "CONTEXT_SAMPLES",
    "MODEL_PATH",
    "WINDOW_MS",
    "WINDOW_SAMPLES",
    "SileroModel",
    "SpeechEvent",
    "SpeechTracker",
    "VadParams",
    "VadResult",
    "VadStream",
    "VadUnavailableError",
    "VoiceActivityDetector",
    "shared_model",
    "speech_segments",
]


@dataclass(frozen=True, slots=True)
class VadParams:
    """Speech detection thresholds (`silence_ms` is the hangover before speech stops)."""

    threshold: float = 0.5
    min_speech_ms: int = 96
    silence_ms: int = 500

    @property
    def release(self) -> float:
        """The lower threshold: scores below it count as silence."""
        return max(0.01, self.threshold - 0.15)


@dataclass(frozen=True, slots=True)
class SpeechEvent:
    """Speech started or stopped at `at_ms` of the stream (detected later, by the hangover)."""

    kind: Literal["start", "stop"]
    at_ms: int


class SpeechTracker:
    """Hysteresis over window probabilities: emits start/stop events with stream positions."""

    def __init__(self, params: VadParams | None = None) -> None:
        self.params = params or VadParams()
        self.in_speech = False
        self.windows = 0
        self._run_start = -1  # first window of the current run above threshold
        self._silence_start = -1  # first window of the current run below release

    @property
    def position_ms(self) -> int:
        """Stream time covered by the windows fed so far."""
        return self.windows * WINDOW_MS

    def end_speech(self) -> None:
        """Forget ongoing speech without an event (its turn was cut off); time keeps running."""
        self.in_speech = False
        self._run_start = -1
        self._silence_start = -1

    def feed(self, probs: NDArray[np.float32]) -> list[SpeechEvent]:
        """Advance over window probabilities; returns the events they trigger, in order."""
        p = self.params
        need_speech = max(1, -(-p.min_speech_ms // WINDOW_MS))
        need_silence = max(1, -(-p.silence_ms // WINDOW_MS))
        events: list[SpeechEvent] = []
        for prob in probs.tolist():
            i = self.windows
            self.windows += 1
            if not self.in_speech:
                if prob >= p.threshold:
                    if self._run_start < 0:
                        self._run_start = i
                    if i - self._run_start + 1 >= need_speech:
                        self.in_speech = True
                        self._silence_start = -1
                        events.append(SpeechEvent("start", self._run_start * WINDOW_MS))
                else:
                    self._run_start = -1
                continue
            if prob < p.release:
                if self._silence_start < 0:
                    self._silence_start = i
                if i - self._silence_start + 1 >= need_silence:
                    self.in_speech = False
                    self._run_start = -1
                    events.append(SpeechEvent("stop", self._silence_start * WINDOW_MS))
            elif prob >= p.threshold:
                self._silence_start = -1
        return events


@dataclass(frozen=True, slots=True)
class VadResult:
    """What one push of audio showed: window scores and speech events."""

    probabilities: NDArray[np.float32]
    events: tuple[SpeechEvent, ...]
    in_speech: bool

    @property
    def max_probability(self) -> float:
        """The highest window score (0.0 without a whole window)."""
        return float(self.probabilities.max()) if len(self.probabilities) else 0.0


class VoiceActivityDetector:
    """A session's VAD: input-format PCM at any rate in, scores and start/stop events out."""

    def __init__(
        self,
        input_rate_hz: int = MODEL_RATE_HZ,
        input_format: str = "pcm16",
        params: VadParams | None = None,
        model: SileroModel | None = None,
    ) -> None:
        self.input_format = input_format
        self._resampler = Resampler(input_rate_hz, MODEL_RATE_HZ, dtype=np.float32)
        self._stream = VadStream(model)
        self.tracker = SpeechTracker(params)

    @property
    def in_speech(self) -> bool:
        """Whether speech is ongoing (started and not yet stopped)."""
        return self.tracker.in_speech

    def push(self, pcm: bytes) -> VadResult:
        """Score the next piece of input audio."""
        samples = self._resampler.process(to_float(pcm, self.input_format))
        return self.push_samples(samples)

    def push_samples(self, samples: Samples) -> VadResult:
        """Score 16 kHz float samples directly."""
        probs = self._stream.push(samples)
        events = self.tracker.feed(probs)
        return VadResult(probs, tuple(events), self.tracker.in_speech)


def speech_segments(
    samples: Samples, params: VadParams | None = None, model: SileroModel | None = None
) -> list[tuple[int, int]]:
    """Speech spans `(start_ms, stop_ms)` of a whole 16 kHz signal (open spans end at its end)."""
    vad = VoiceActivityDetector(params=params, model=model)
    result = vad.push_samples(samples)
    tail = vad.push_samples(
        np.zeros(WINDOW_SAMPLES * (vad.tracker.params.silence_ms // WINDOW_MS + 2), np.float32)
    )
    spans: list[tuple[int, int]] = []
    start: int | None = None
    end_ms = len(samples) * 1000 // MODEL_RATE_HZ
    for event in result.events + tail.events:
        if event.kind == "start":
            start = event.at_ms
        elif start is not None:
            spans.append((start, min(event.at_ms, end_ms)))
            start = None
    if start is not None:
        spans.append((start, end_ms))
    return spans
