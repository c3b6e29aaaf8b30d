"""Server-side voice activity for turn-based profiles (JoyAI-style, protocol.md §9.6).

Every accepted append's audio goes through a Silero VAD. Under `turn_detection: server_vad`
a detected start emits `input_audio_buffer.speech_started` and interrupts an active response
(`interrupt_response` is always true); a detected stop emits `speech_stopped` and commits the
turn for the client (`client_event_id: null`). In both turn modes, while the open turn holds
no speech it keeps only its latest audio unit (the pre-roll) and its latest frame group, so an
idle camera or a silent microphone never fills the pending-input buffer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from duplex_client.protocol.client_events import InputAudioBufferCommit
from duplex_client.protocol.server_events import (
    InputAudioBufferSpeechStarted,
    InputAudioBufferSpeechStopped,
)
from duplex_client.server import ids, intake
from duplex_client.server.errors import Reject

if TYPE_CHECKING:
    from duplex_client.server.engine.vad import VadParams, VoiceActivityDetector
    from duplex_client.server.session import DuplexSession
    from duplex_client.server.settings import SessionSettings


def _params(settings: SessionSettings) -> VadParams:
    from duplex_client.server.engine.vad import VadParams

    td = settings.turn_detection or {}
    base = VadParams()
    threshold = td.get("threshold", base.threshold)
    silence = td.get("silence_duration_ms", base.silence_ms)
    return VadParams(
        threshold=float(threshold) if isinstance(threshold, int | float) else base.threshold,
        min_speech_ms=base.min_speech_ms,
        silence_ms=int(silence) if isinstance(silence, int | float) and silence > 0 else 500,
    )


class VadTurns:
    """A session's server VAD state: the detector and whether the open turn holds speech."""

    def __init__(self, settings: SessionSettings) -> None:
        self.turn_speech = False
        self._key: tuple[Any, ...] | None = None
        self.detector: VoiceActivityDetector | None = None
        self.configure(settings)

    def configure(self, settings: SessionSettings) -> None:
        """(Re)build the detector when the format, rate or thresholds changed."""
        from duplex_client.server.engine.vad import VoiceActivityDetector

        params = _params(settings)
        key = (settings.input_rate, settings.input_format, params)
        if key != self._key:
            self._key = key
            rate, fmt = settings.input_rate, settings.input_format
            self.detector = VoiceActivityDetector(rate, fmt, params)

    @staticmethod
    def server_vad(settings: SessionSettings) -> bool:
        """Whether the server detects turns (`turn_detection.type == "server_vad"`)."""
        td = settings.turn_detection
        return isinstance(td, dict) and td.get("type") == "server_vad"

    def after_append(self, s: DuplexSession, pcm: bytes, now: float) -> None:
        """Run the VAD over an accepted append's audio and act on what it found."""
        assert self.detector is not None
        events = self.detector.push(pcm).events if pcm else ()
        detect = self.server_vad(s.settings)
        for event in events:
            if event.kind == "start":
                self.turn_speech = True
                if detect:
                    s.turn_item_id = s.turn_item_id or ids.item_id()
                    started = InputAudioBufferSpeechStarted(
                        audio_start_ms=event.at_ms, item_id=s.turn_item_id
                    )
                    s.emitter.emit(started, now)
                    if s.conversation.active is not None:
                        s.interrupt("turn_detected", now)
            elif detect and self.turn_speech:
                stopped = InputAudioBufferSpeechStopped(
                    audio_end_ms=event.at_ms, item_id=s.turn_item_id
                )
                s.emitter.emit(stopped, now)
                self._server_commit(s, now)
        if not self.turn_speech and not self.detector.in_speech:
            trim_idle(s)

    def _server_commit(self, s: DuplexSession, now: float) -> None:
        from duplex_client.server.turns import commit

        if not intake.has_input(s):
            self.turn_speech = False
            return
        try:
            commit(s, InputAudioBufferCommit(event_id=""), now)
        except Reject as rej:
            s.reject(rej, None, now)

    def turn_sealed(self) -> None:
        """The open turn was committed or cleared: the next one starts without speech."""
        self.turn_speech = False
        if self.detector is not None:
            self.detector.tracker.end_speech()  # speech still sounding starts a new turn


def trim_idle(s: DuplexSession) -> None:
    """Keep only the open turn's latest audio unit and latest frame-bearing unit."""
    units = s.turn_units
    if len(units) <= 1:
        return
    last_audio = next((u for u in reversed(units) if u.pcm), None)
    last_frames = next((u for u in reversed(units) if u.frames is not None), None)
    keep = {id(u) for u in (last_audio, last_frames) if u is not None}
    if len(keep) == len(units):
        return
    s.turn_units = [u for u in units if id(u) in keep]
    queued = [u for u in s.manual_queue if id(u) not in keep]
    if queued:
        s.manual_queue = [u for u in s.manual_queue if id(u) in keep]
        for unit in queued:
            s.budget.release(unit.charge)
