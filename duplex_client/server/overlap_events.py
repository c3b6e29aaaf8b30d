"""One append's overlap with an active response: the rule's decision, its event, its effect."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from duplex_client.protocol.capabilities import UnitKind
from duplex_client.protocol.client_events import InputAudioBufferAppend
from duplex_client.protocol.response_events import OverlapDecision as OverlapDecisionEvent
from duplex_client.protocol.server_events import InputAudioBufferSpeechStarted
from duplex_client.server.inputs import ParsedAppend
from duplex_client.server.overlap import BARGE_IN, OverlapInput, OverlapPolicy, OverlapTuning
from duplex_client.server.ports import SessionPort
from duplex_client.server.profiles.base import TURN_BASED


def effective_policy(s: SessionPort) -> str:
    """The session's overlap policy; server VAD implies `barge_in_on_speech` (as upstream)."""
    td = s.settings.turn_detection
    if isinstance(td, dict) and td.get("type") == "server_vad":
        return "barge_in_on_speech"
    return s.settings.overlap_policy


def auto_responds(s: SessionPort) -> bool:
    """Whether the model hears every unit and answers by itself (the model-native auto lane)."""
    return s.settings.auto_response and s.profile.implementation_level != TURN_BASED


class AppendOverlap:
    """Whether an arriving append overlaps an active response, and (once) what that does."""

    def __init__(
        self, s: SessionPort, event: InputAudioBufferAppend, parsed: ParsedAppend, duration_ms: int
    ) -> None:
        self._s = s
        self._parsed = parsed
        self._duration_ms = duration_ms
        self._silence_rms = event.silence_rms
        self._hints = OverlapInput(
            duration_ms=duration_ms,
            client_action=event.overlap_action,
            force_barge_in=event.force_barge_in is True,
            force_listen=event.force_listen is True,
        )
        caps = s.caps
        policy = s.inputs.overlap
        if policy is None:
            video_only = caps.allows(UnitKind.VISION)
            policy = OverlapPolicy(
                supports_barge_in=caps.supports_barge_in, video_without_audio=video_only
            )
            s.inputs.overlap = policy
        self._policy = policy
        self.applies = policy.applies(
            policy=effective_policy(s),
            auto_responds=auto_responds(s),
            response_active=s.conversation.active is not None,
            requests_barge_in=self._hints.requests_barge_in,
        )
        if not self.applies:
            policy.reset()
        self.decided = False

    def decide(self, now: float, *, vad_started: bool | None) -> None:
        """Decide, emit `overlap.decision` and act on a barge-in (the response is cancelled)."""
        s, parsed = self._s, self._parsed
        settings = s.settings
        tuning = OverlapTuning(
            short_ack_ms=settings.overlap_short_ack_ms,
            barge_in_ms=settings.overlap_barge_in_ms,
            silence_rms=(
                settings.overlap_silence_rms if self._silence_rms is None else self._silence_rms
            ),
        )
        declared = True if vad_started else parsed.is_speech
        inp = replace(
            self._hints,
            is_speech=declared,
            rms=_rms(parsed.pcm, settings.pcm_format) if parsed.pcm else None,
            has_frames=parsed.frames is not None,
            vad_started=vad_started,
        )
        policy = effective_policy(s)
        decision = self._policy.decide(
            inp, policy=policy, tuning=tuning, auto_responds=auto_responds(s)
        )
        self.decided = True
        head = {"type": "overlap.decision", "session_id": s.session_id, "epoch": s.epoch}
        event = OverlapDecisionEvent(
            session_id=s.session_id,
            epoch=s.epoch,
            policy=policy,
            action=decision.action,
            reason=decision.reason,
            metadata={**head, "policy": policy, **decision.details},
        )
        s.emit(event, now)
        if decision.action != BARGE_IN:
            return
        self._policy.reset()
        if vad_started is None:  # no VAD announced the speech: say where it was heard
            at = s.inputs.audio_end_ms - self._duration_ms
            s.emit(InputAudioBufferSpeechStarted(audio_start_ms=at, item_id=None), now)
        s.interrupt(decision.cancel_reason or "barge_in", now)


def _rms(pcm: bytes, pcm_format: str) -> float:
    """RMS of mono PCM on a 0..1 scale."""
    if pcm_format == "pcm_f32le":
        x = np.frombuffer(pcm, dtype="<f4")
    else:
        x = np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768.0
    return float(np.sqrt(np.dot(x, x) / len(x))) if len(x) else 0.0
