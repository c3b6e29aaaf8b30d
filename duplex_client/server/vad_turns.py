"""Server-side voice activity for turn-based profiles (JoyAI-style, protocol.md §9.6).

Every accepted append's audio goes through a Silero VAD. Under `turn_detection: server_vad`
a detected start emits `input_audio_buffer.speech_started` and interrupts an active response
(`interrupt_response` is always true); a detected stop emits `speech_stopped` and commits the
turn for the client (`client_event_id: null`). In both turn modes, while the open turn holds
no speech it keeps only its latest audio unit (the pre-roll) and its latest frame group, so an
idle camera or a silent microphone never fills the pending-input buffer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from duplex_client.protocol.requests import TurnDetection

if TYPE_CHECKING:
    from duplex_client.server.engine.vad import SpeechEvent, VadParams, VoiceActivityDetector
    from duplex_client.server.settings import SessionSettings


def _params(settings: SessionSettings) -> VadParams:
    from duplex_client.server.engine.vad import VadParams

    base = VadParams()
    td = settings.turn_detection
    if not td:
        return base
    knobs = TurnDetection.from_raw(td)  # validated when the session took it
    return VadParams(
        threshold=base.threshold if knobs.threshold is None else knobs.threshold,
        min_speech_ms=base.min_speech_ms
        if knobs.min_speech_duration_ms is None
        else int(knobs.min_speech_duration_ms),
        silence_ms=base.silence_ms
        if knobs.silence_duration_ms is None
        else int(knobs.silence_duration_ms),
    )


class VadTurns:
    """A session's server VAD state: the detector and whether the open turn holds speech."""

    def __init__(self, settings: SessionSettings) -> None:
        self._turn_speech = False
        self._key: tuple[Any, ...] | None = None
        self._detector: VoiceActivityDetector | None = None
        self.configure(settings)

    def configure(self, settings: SessionSettings) -> None:
        """(Re)build the detector when the format, rate or thresholds changed."""
        from duplex_client.server.engine.vad import VoiceActivityDetector

        params = _params(settings)
        key = (settings.input_rate, settings.pcm_format, params)
        if key != self._key:
            self._key = key
            rate, fmt = settings.input_rate, settings.pcm_format
            self._detector = VoiceActivityDetector(rate, fmt, params)

    @staticmethod
    def server_vad(settings: SessionSettings) -> bool:
        """Whether the server detects turns (`turn_detection.type == "server_vad"`)."""
        td = settings.turn_detection
        return isinstance(td, dict) and td.get("type") == "server_vad"

    def push(self, pcm: bytes) -> Sequence[SpeechEvent]:
        """Run the detector over an accepted append's audio; its starts and stops, in order."""
        assert self._detector is not None
        return self._detector.push(pcm).events if pcm else ()

    def speech_started(self) -> None:
        """A start was detected: the open turn holds speech."""
        self._turn_speech = True

    @property
    def turn_speech(self) -> bool:
        """Whether the open turn holds detected speech."""
        return self._turn_speech

    @property
    def idle(self) -> bool:
        """Whether neither the open turn nor the audio now sounding holds speech."""
        assert self._detector is not None
        return not self._turn_speech and not self._detector.in_speech

    def speech_ended(self) -> None:
        """The speech that stopped left nothing to commit: the open turn holds none."""
        self._turn_speech = False

    def turn_sealed(self) -> None:
        """The open turn was committed or cleared: the next one starts without speech."""
        self._turn_speech = False
        if self._detector is not None:
            self._detector.tracker.end_speech()  # speech still sounding starts a new turn
