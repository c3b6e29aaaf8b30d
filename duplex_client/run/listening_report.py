"""What the listener heard, turned into files and figures at the end of a run.

`SentAudio` keeps the input PCM exactly as sent, placed on the media clock (a sparse raw file
in the bundle, removed once the mix is written). `ListeningReport.build` (heavy: VAD,
resampling, WAV writing; run it off the event loop) makes `heard.wav`, `conversation.wav`,
the turn rows and the run metrics from the heard segments, the responses and the user's
speech (annotations, else voice activity in the input, read from the plan cache when the
same input was scored before).
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
from duplex_client.framing.pcm_format import DEFAULT_PCM, PcmFormat
from duplex_client.framing.plan import PlannedAppend
from duplex_client.framing.sources import INPUT_SAMPLE_RATE_HZ

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from duplex_client.media.plan_cache import PlanCache


class SentAudio:
    """The input PCM as sent, in the session's input format (`fmt`: its encoding and rate),
    on the media clock; gaps (VISION units) are silence."""

    def __init__(self, path: Path, fmt: PcmFormat = DEFAULT_PCM) -> None:
        self.path = path
        self.fmt = fmt
        self.end_sample = 0
        self._file = path.open("w+b")
        #: Where the file's position is (a seek flushes its buffer: appends in order skip it).
        self._at = 0

    @property
    def rate_hz(self) -> int:
        """The sample rate of what `read` returns (the session's input rate)."""
        return self.fmt.sample_rate_hz

    def record(self, append: PlannedAppend) -> None:
        """Place one sent append's PCM at its media start."""
        if not append.pcm:
            return
        width = self.fmt.sample_width
        start = append.media_start_ms * self.fmt.sample_rate_hz // 1000
        if start * width != self._at:
            self._file.seek(start * width)
        self._file.write(append.pcm)
        self._at = start * width + len(append.pcm)
        self.end_sample = max(self.end_sample, start + len(append.pcm) // width)

    def read(self) -> npt.NDArray[np.int16]:
        """Everything recorded, from media time 0, as int16 at `rate_hz` (float32 input is
        decoded as float32, never as int16)."""
        import numpy as np

        self._file.flush()
        self._file.seek(0)
        data = self._file.read(self.end_sample * self.fmt.sample_width)
        self._at = len(data)
        if not self.fmt.is_float:
            return np.frombuffer(data, dtype="<i2").copy()
        floats = np.nan_to_num(np.frombuffer(data, dtype="<f4"), nan=0.0, posinf=1.0, neginf=-1.0)
        pcm: npt.NDArray[np.int16] = np.clip(np.rint(floats * 32768.0), -32768, 32767).astype(
            np.int16
        )
        return pcm

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
        sent_rate_hz: int = INPUT_SAMPLE_RATE_HZ,
        segments: Sequence[HeardSegment],
        audio: Mapping[str, bytes],
        spans: Sequence[HeardSpan],
        responses: Sequence[ResponseFacts],
        timings: Sequence[ResponseTiming],
        events: Sequence[Timed],
        unit_sent_ms: Mapping[int, float],
        annotations: Sequence[SpeechSegment] | None,
        played: bool = True,
        speech_cache: PlanCache | None = None,
    ) -> ListeningReport:
        """Write `heard.wav` and `conversation.wav`, then measure the turns (`played` False:
        nothing played the answers, so latencies end at the first audio received).

        `sent` is the input as sent (int16 at `sent_rate_hz`): resampled to the answers'
        rate for the conversation's left channel, and to 16 kHz for voice activity.
        """
        from duplex_client.bundle.wavfile import write_wav
        from duplex_client.media.resample import resample

        report = cls()
        media_samples = media_end_ms * sample_rate_hz // 1000
        length = heard_length(media_samples, segments)
        heard = render_heard(segments, audio, length)
        write_wav(out_dir / HEARD_FILE, heard, sample_rate_hz)
        upsampled = resample(sent, sent_rate_hz, sample_rate_hz)
        write_wav(out_dir / CONVERSATION_FILE, mix_conversation(upsampled, heard), sample_rate_hz)
        if sent_rate_hz != INPUT_SAMPLE_RATE_HZ:  # Silero VAD scores 16 kHz windows
            sent = resample(sent, sent_rate_hz, INPUT_SAMPLE_RATE_HZ)
        source: UserEndSource = "none"
        if annotations is not None:
            report.user_speech, source = list(annotations), "annotation"
        else:
            speech = report._detect(sent, speech_cache)
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

    def _detect(
        self, sent: npt.NDArray[np.int16], cache: PlanCache | None
    ) -> list[SpeechSegment] | None:
        from duplex_client.media.plan_cache import cached_speech
        from duplex_client.media.speech import VadUnavailable, detect_speech

        if not len(sent):
            return []
        try:
            return detect_speech(sent) if cache is None else cached_speech(cache, sent)
        except VadUnavailable as exc:
            self.warnings.append(f"user speech unknown, no latency measured: {exc}")
            return None
