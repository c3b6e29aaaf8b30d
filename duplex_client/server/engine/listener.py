"""Streaming speech segmentation: a session's audio in, each finished utterance's samples out."""

from __future__ import annotations

from typing import Final

import numpy as np

from duplex_client.media.resample import Resampler
from duplex_client.server.engine.pcm import MODEL_RATE_HZ, Samples, to_float
from duplex_client.server.engine.vad import VadParams, VoiceActivityDetector

#: Audio kept before a detected start and after a detected stop (ms).
PREROLL_MS: Final = 300
TAIL_MS: Final = 300
_PER_MS: Final = MODEL_RATE_HZ // 1000


class SegmentListener:
    """Runs the VAD over consecutive audio and cuts out every speech segment (with margins).

    Between segments only the last `PREROLL_MS` of audio is kept, so memory stays bounded
    however long the silence lasts.
    """

    def __init__(
        self, sample_rate_hz: int, input_format: str = "pcm16", params: VadParams | None = None
    ) -> None:
        self.sample_rate_hz = sample_rate_hz
        self.input_format = input_format
        self._resampler = Resampler(sample_rate_hz, MODEL_RATE_HZ, dtype=np.float32)
        self._vad = VoiceActivityDetector(params=params)
        self._buf = np.zeros(0, dtype=np.float32)
        self._buf_start = 0  # stream sample index of _buf[0]
        self._total = 0  # stream samples seen
        self._segment_start: int | None = None

    @property
    def in_speech(self) -> bool:
        """Whether an utterance is under way."""
        return self._segment_start is not None

    def push(self, pcm: bytes) -> list[Samples]:
        """Feed input PCM; returns the utterances that ended in it (usually none)."""
        samples = self._resampler.process(to_float(pcm, self.input_format))
        self._buf = np.concatenate([self._buf, samples])
        self._total += len(samples)
        finished: list[Samples] = []
        for event in self._vad.push_samples(samples).events:
            at = event.at_ms * _PER_MS
            if event.kind == "start":
                self._segment_start = max(self._buf_start, at - PREROLL_MS * _PER_MS)
            elif self._segment_start is not None:
                finished.append(self._slice(self._segment_start, at + TAIL_MS * _PER_MS))
                self._segment_start = None
        keep_from = self._segment_start
        if keep_from is None:
            keep_from = self._total - PREROLL_MS * _PER_MS
        drop = keep_from - self._buf_start
        if drop > 0:
            self._buf = self._buf[drop:]
            self._buf_start += drop
        return finished

    def flush(self) -> Samples | None:
        """End the utterance under way now (the input was committed); None if there is none."""
        if self._segment_start is None:
            return None
        segment = self._slice(self._segment_start, self._total)
        self._segment_start = None
        self._vad.tracker.end_speech()
        return segment

    def _slice(self, start: int, end: int) -> Samples:
        lo = max(0, start - self._buf_start)
        hi = max(lo, min(len(self._buf), end - self._buf_start))
        return self._buf[lo:hi].copy()
