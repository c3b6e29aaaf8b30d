"""What to do with input that arrives while a response is active (`overlap.decision`, §4.4).

Sans-I/O: the rule reads the session's overlap policy and tuning, the profile's barge-in
support, the lane, and one append's facts, and keeps one number, the overlapping speech
heard so far. It follows vLLM-Omni's rule:

- It applies while a response is active, in the manual lane always, in the auto lane
  (the model hears every unit anyway) only when barge-in is possible and asked for
  (`barge_in_on_speech`).
- Auto lane: speech barges in (`barge_in_on_speech`, or `server_vad_speech_started` on the
  append where the server VAD heard it start: the response is then cancelled with reason
  `turn_detected`); anything else keeps listening (`auto_response_continuous`).
- The client's hints come first: `overlap_action` (`barge_in`, `listen` or `drop`, and
  vLLM-Omni's synonyms) is followed (`client_overlap_action`), `force_barge_in` barges in
  (`client_force_barge_in`), and in the manual lane `force_listen` listens
  (`client_force_listen`); a barge-in asked of a profile without one is `listen`
  (`barge_in_unsupported`).
- Manual lane: a silent append is dropped (`silence_or_noise`) unless it carries frames a
  video-only unit may hold (`vision_follow`); speech under `listen_only` is listened to
  (`policy_listen_only`); under `barge_in_on_speech` it barges in, or keeps listening while
  the server VAD says the utterance that already barged in goes on
  (`server_vad_utterance_active`). A policy without a fixed rule weighs the overlap's
  length: at most `overlap_short_ack_ms` is a short acknowledgement (`short_ack`), at least
  `overlap_barge_in_ms` of speech barges in (`long_overlap_speech`), and in between it
  keeps listening (`accumulating_overlap_speech`).

Without a declared `is_speech` an append is speech when its RMS reaches
`overlap_silence_rms` (full scale 1.0).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: Decisions' actions.
DROP = "drop"
LISTEN = "listen"
BARGE_IN = "barge_in"
#: A client's `overlap_action` hint, by the action it asks for (vLLM-Omni's spellings).
CLIENT_ACTIONS = (
    dict.fromkeys(("barge_in", "interrupt", "cancel"), BARGE_IN)
    | dict.fromkeys(("listen", "continue", "continue_output", "ack"), LISTEN)
    | dict.fromkeys(("drop", "ignore", "silence"), DROP)
)


@dataclass(frozen=True, slots=True)
class OverlapTuning:
    """The session's overlap knobs (`overlap_short_ack_ms`, `_barge_in_ms`, `_silence_rms`)."""

    short_ack_ms: int = 700
    barge_in_ms: int = 1200
    silence_rms: float = 0.003


@dataclass(frozen=True, slots=True)
class OverlapInput:
    """One overlapping append as the rule sees it."""

    duration_ms: int
    #: The client's `is_speech` (None: undeclared).
    is_speech: bool | None = None
    #: RMS of the append's audio on a 0..1 scale (None: no audio to measure).
    rms: float | None = None
    has_frames: bool = False
    #: The server VAD: True if speech started in this append, False while an utterance that
    #: started earlier goes on, None when no VAD runs.
    vad_started: bool | None = None
    #: The client's hints: `overlap_action`, `force_barge_in`, `force_listen`.
    client_action: str | None = None
    force_barge_in: bool = False
    force_listen: bool = False

    @property
    def requests_barge_in(self) -> bool:
        """Whether the client's hints ask for a barge-in."""
        action = (self.client_action or "").strip().lower()
        return self.force_barge_in or CLIENT_ACTIONS.get(action) == BARGE_IN


@dataclass(frozen=True, slots=True)
class OverlapDecision:
    """An action (`drop`, `listen` or `barge_in`), why, and the rule's details."""

    action: str
    reason: str
    #: `duration_ms`, `overlap_speech_ms`, `buffer_audio`, … (the event's `metadata`).
    details: dict[str, Any] = field(default_factory=dict)
    #: The cancel reason of a barge-in (`barge_in` or, after a server VAD start, `turn_detected`).
    cancel_reason: str | None = None


class OverlapPolicy:
    """One session's overlap rule and the overlapping speech it has counted."""

    def __init__(self, *, supports_barge_in: bool, video_without_audio: bool) -> None:
        self._supports_barge_in = supports_barge_in
        self._video_without_audio = video_without_audio
        self.overlap_speech_ms = 0

    def applies(
        self, *, policy: str, auto_responds: bool, response_active: bool, requests_barge_in: bool
    ) -> bool:
        """Whether an append now overlaps a response the rule must decide about."""
        if not response_active:
            return False
        asked = policy == "barge_in_on_speech" or requests_barge_in
        return not auto_responds or (self._supports_barge_in and asked)

    def reset(self) -> None:
        """Forget the overlapping speech counted (a barge-in, or no response active)."""
        self.overlap_speech_ms = 0

    @staticmethod
    def is_speech(inp: OverlapInput, tuning: OverlapTuning) -> bool:
        """Declared speech, else RMS at or above the silence floor (no audio: not speech)."""
        if inp.is_speech is not None:
            return inp.is_speech
        return inp.rms is not None and inp.rms >= tuning.silence_rms

    def decide(
        self, inp: OverlapInput, *, policy: str, tuning: OverlapTuning, auto_responds: bool
    ) -> OverlapDecision:
        """The decision for one overlapping append (updates the overlapping speech counted)."""
        speech = self.is_speech(inp, tuning)
        hinted = self._hinted(inp, speech, tuning)
        if hinted is not None:
            return hinted
        if auto_responds:
            return self._auto(inp, speech, policy)
        if inp.force_listen:
            self.reset()
            return self._made(
                LISTEN, "client_force_listen", inp, buffer_audio=speech, defer_runtime_append=True
            )
        return self._manual(inp, speech, policy, tuning)

    def _hinted(
        self, inp: OverlapInput, speech: bool, tuning: OverlapTuning
    ) -> OverlapDecision | None:
        """What the client's hints decide, before any policy (None: they decide nothing)."""
        if inp.requests_barge_in and not self._supports_barge_in:
            if speech:
                self.overlap_speech_ms += inp.duration_ms
            return self._made(
                LISTEN,
                "barge_in_unsupported",
                inp,
                buffer_audio=speech,
                defer_runtime_append=True,
            )
        raw = (inp.client_action or "").strip().lower()
        action = CLIENT_ACTIONS.get(raw)
        if action == BARGE_IN:
            return self._made(
                BARGE_IN, "client_overlap_action", inp, cancel_reason="barge_in", buffer_audio=True
            )
        if action == LISTEN:
            self.reset()
            keep = raw == "listen" and speech and inp.duration_ms > tuning.short_ack_ms
            return self._made(
                LISTEN, "client_overlap_action", inp, buffer_audio=keep, defer_runtime_append=True
            )
        if action == DROP:
            self.reset()
            return self._made(DROP, "client_overlap_action", inp, buffer_audio=False)
        if inp.force_barge_in:
            return self._made(
                BARGE_IN, "client_force_barge_in", inp, cancel_reason="barge_in", buffer_audio=True
            )
        return None

    def _auto(self, inp: OverlapInput, speech: bool, policy: str) -> OverlapDecision:
        if speech:
            self.overlap_speech_ms += inp.duration_ms
        if (
            self._supports_barge_in
            and speech
            and policy == "barge_in_on_speech"
            and inp.vad_started is not False
        ):
            return self._barge_in(inp, "barge_in_on_speech")
        return self._made(
            LISTEN,
            "auto_response_continuous",
            inp,
            buffer_audio=True,
            defer_runtime_append=False,
            force_listen=False,
            preserve_realtime_input=True,
        )

    def _manual(
        self, inp: OverlapInput, speech: bool, policy: str, tuning: OverlapTuning
    ) -> OverlapDecision:
        if not speech:
            if inp.has_frames and self._video_without_audio:
                return self._made(
                    LISTEN,
                    "vision_follow",
                    inp,
                    buffer_audio=True,
                    defer_runtime_append=False,
                    force_listen=False,
                )
            return self._made(DROP, "silence_or_noise", inp, buffer_audio=False)
        self.overlap_speech_ms += inp.duration_ms
        if policy == "listen_only":
            return self._listen(inp, "policy_listen_only")
        if policy == "barge_in_on_speech":
            if not self._supports_barge_in:
                return self._listen(inp, "barge_in_unsupported")
            if inp.vad_started is False:
                return self._made(
                    LISTEN,
                    "server_vad_utterance_active",
                    inp,
                    buffer_audio=True,
                    defer_runtime_append=False,
                    force_listen=True,
                    preserve_realtime_input=True,
                )
            return self._barge_in(inp, "policy_barge_in_on_speech")
        if inp.duration_ms <= tuning.short_ack_ms and self.overlap_speech_ms <= tuning.short_ack_ms:
            return self._listen(inp, "short_ack")
        if self.overlap_speech_ms >= tuning.barge_in_ms:
            if not self._supports_barge_in:
                return self._listen(inp, "barge_in_unsupported")
            return self._made(BARGE_IN, "long_overlap_speech", inp, buffer_audio=True)
        return self._listen(inp, "accumulating_overlap_speech")

    def _barge_in(self, inp: OverlapInput, reason: str) -> OverlapDecision:
        started = inp.vad_started is True
        decision = self._made(
            BARGE_IN,
            "server_vad_speech_started" if started else reason,
            inp,
            cancel_reason="turn_detected" if started else "barge_in",
            buffer_audio=True,
        )
        return decision

    def _listen(self, inp: OverlapInput, reason: str) -> OverlapDecision:
        return self._made(LISTEN, reason, inp, buffer_audio=True, defer_runtime_append=True)

    def _made(
        self,
        action: str,
        reason: str,
        inp: OverlapInput,
        *,
        cancel_reason: str | None = None,
        **flags: bool,
    ) -> OverlapDecision:
        details: dict[str, Any] = {
            "action": action,
            "reason": reason,
            "duration_ms": inp.duration_ms,
            "overlap_speech_ms": self.overlap_speech_ms,
        }
        if cancel_reason is not None:
            details["cancel_reason"] = cancel_reason
        details.update(flags)
        return OverlapDecision(action, reason, details, cancel_reason)
