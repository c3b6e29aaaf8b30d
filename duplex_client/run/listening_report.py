"""What the listener heard, turned into files and figures at the end of a run.

`SentAudio` keeps the input PCM exactly as sent, placed on the media clock (a sparse raw file
in the bundle, removed once the mix is written). `ListeningReport.build` (heavy: VAD,
resampling, WAV writing; run it off the event loop) makes `heard.wav`, `conversation.wav`,
the turn rows and the run metrics from the heard segments, the responses and the user's
speech (annotations, else voice activity in the input).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from duplex_client.analysis.annotations import SpeechSegment
from duplex_client.analysis.heard import heard_length, mix_conversation, render_heard
from duplex_client.analysis.listener import HeardSegment, HeardSpan
from duplex_client.analysis.turns import (
    ResponseFacts,
    Turn,
    TurnMetrics,
    UserEndSource,
    build_turns,
)
from duplex_client.analysis.vllm_metrics import ResponseTiming, Timed, duplex_session_metrics
from duplex_client.bundle.layout import CONVERSATION_FILE, HEARD_FILE
from duplex_client.framing.plan import PlannedAppend
from duplex_client.framing.sources import BYTES_PER_SAMPLE, INPUT_SAMPLE_RATE_HZ

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt


class SentAudio:
    """The input PCM as sent, at 16 kHz on the media clock; gaps (VISION units) are silence."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.end_sample = 0
        self._file = path.open("w+b")

    def record(self, append: PlannedAppend) -> None:
        """Place one sent append's PCM at its media start."""
        if not append.pcm:
            return
        start = append.media_start_ms * INPUT_SAMPLE_RATE_HZ // 1000
        self._file.seek(start * BYTES_PER_SAMPLE)
        self._file.write(append.pcm)
        self.end_sample = max(self.end_sample, start + len(append.pcm) // BYTES_PER_SAMPLE)

    def read(self) -> npt.NDArray[np.int16]:
        """Everything recorded, from media time 0."""
        import numpy as np

        self._file.flush()
        self._file.seek(0)
        data = self._file.read(self.end_sample * BYTES_PER_SAMPLE)
        return np.frombuffer(data, dtype="<i2").copy()

    def discard(self) -> None:
        """Close and remove the file."""
        with contextlib.suppress(OSError):
            self._file.close()
        with contextlib.suppress(OSError):
            os.unlink(self.path)


@dataclass(slots=True)
class ListeningReport:
    """Turns, metrics and the files written; `warnings` say what could not be measured."""

    turns: list[Turn] = field(default_factory=list)
    metrics: dict[str, Any] = field(default_factory=dict)
    user_speech: list[SpeechSegment] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @classmethod
    def build(
        cls,
        out_dir: Path,
        *,
        sample_rate_hz: int,
        media_end_ms: int,
        sent: npt.NDArray[np.int16],
        segments: Sequence[HeardSegment],
        audio: Mapping[str, bytes],
        spans: Sequence[HeardSpan],
        responses: Sequence[ResponseFacts],
        timings: Sequence[ResponseTiming],
        events: Sequence[Timed],
        unit_sent_ms: Mapping[int, float],
        annotations: Sequence[SpeechSegment] | None,
        played: bool = True,
    ) -> ListeningReport:
        """Write `heard.wav` and `conversation.wav`, then measure the turns (`played` False:
        nothing played the answers, so latencies end at the first audio received)."""
        from duplex_client.bundle.wavfile import write_wav
        from duplex_client.media.resample import resample

        report = cls()
        media_samples = media_end_ms * sample_rate_hz // 1000
        length = heard_length(media_samples, segments)
        heard = render_heard(segments, audio, length)
        write_wav(out_dir / HEARD_FILE, heard, sample_rate_hz)
        upsampled = resample(sent, INPUT_SAMPLE_RATE_HZ, sample_rate_hz)
        write_wav(out_dir / CONVERSATION_FILE, mix_conversation(upsampled, heard), sample_rate_hz)
        source: UserEndSource = "none"
        if annotations is not None:
            report.user_speech, source = list(annotations), "annotation"
        else:
            speech = report._detect(sent)
            if speech is not None:
                report.user_speech, source = speech, "vad"
        spans_by_id = {s.response_id: s for s in spans}
        report.turns = build_turns(
            responses, spans_by_id, report.user_speech, source, unit_sent_ms, played=played
        )
        metrics = TurnMetrics(
            report.turns, segments, sample_rate_hz, report.user_speech, source, played=played
        )
        report.turns = metrics.measured_turns()
        report.metrics = {
            **metrics.to_dict(),
            "vllm_omni": duplex_session_metrics(timings, events, stream_start_ms=0.0),
        }
        return report

    def _detect(self, sent: npt.NDArray[np.int16]) -> list[SpeechSegment] | None:
        from duplex_client.media.speech import VadUnavailable, detect_speech

        if not len(sent):
            return []
        try:
            return detect_speech(sent)
        except VadUnavailable as exc:
            self.warnings.append(f"user speech unknown, no latency measured: {exc}")
            return None
