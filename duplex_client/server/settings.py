"""The effective session configuration after a `session.update` (protocol.md §2.1, §2.2).

The schema (`protocol.requests.SessionRequest`) checks every field; what is checked here needs
the session: a change of model, voice, instructions, format or reference voice, agreeing
rates, the profile's VAD and reference-voice requirement.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from typing import Any, Final

from duplex_client.protocol.errors import ErrorCode
from duplex_client.protocol.fields import SchemaError
from duplex_client.protocol.requests import (
    BYTES_PER_SAMPLE,
    G711_DEFAULT_RATE,
    G711_FORMATS,
    INPUT_FORMATS,
    SessionRequest,
    input_format,
)
from duplex_client.server import session_fields
from duplex_client.server.errors import Reject
from duplex_client.server.knobs import EXTRA_DEFAULTS, merge_extra_body
from duplex_client.server.profiles import Profile
from duplex_client.server.tool_settings import check_session_tools

__all__ = ["BYTES_PER_SAMPLE", "INPUT_FORMATS", "SessionSettings", "apply_update"]

#: Keys of the `session` object this server reads or owns (others are echoed as extras).
_HANDLED: Final = frozenset(
    {
        "type",
        "object",
        "id",
        "session_id",
        "model",
        "modalities",
        "input_audio_format",
        "output_audio_format",
        "sample_rate_hz",
        "sample_rate",
        "audio",
        "turn_detection",
        "overlap_policy",
        "overlap_short_ack_ms",
        "overlap_barge_in_ms",
        "overlap_silence_rms",
        "input_audio_transcription",
        "playback_commit_policy",
        "instructions",
        "voice",
        "temperature",
        "max_response_output_tokens",
        "idle_timeout_s",
        "ref_audio",
        "extra_body",
        "capabilities",
        "playback",
        "state",
        "epoch",
        "tools",
        "tool_choice",
        # upstream's session fields (read, or owned by the session: issue #20)
        "output_modalities",
        "response_format",
        "max_output_tokens",
        "max_tokens",
        "speed",
        "tracing",
        "turn_state",
        "turn_id",
        "active_request_id",
        "active_response_id",
        "active_response_turn_id",
        # vLLM-Omni 0.30.0's (issue #29): `server/session_fields.py`
        "initial_user_text",
        "input_audio_noise_reduction",
    }
)


@dataclass(frozen=True, slots=True)
class SessionSettings:
    """The effective configuration of one session (never holds the reference voice itself)."""

    model: str = ""
    modalities: tuple[str, ...] = ("audio", "text")
    input_format: str = "pcm16"
    input_rate: int = 16000
    output_rate: int = 24000
    turn_detection: dict[str, Any] | None = None
    overlap_policy: str = "listen_only"
    overlap_short_ack_ms: int = 700
    overlap_barge_in_ms: int = 1200
    overlap_silence_rms: float = 0.003
    input_audio_transcription: dict[str, Any] | None = None
    playback_commit_policy: str = "commit_all_on_done"
    instructions: str | None = None
    voice: str | None = None
    temperature: float | None = None
    max_output_tokens: int | str | None = None
    idle_timeout_s: float = 300.0
    speed: float | None = None
    tracing: str | dict[str, Any] | None = None
    #: The user's opening turn as text (`session_fields`); not echoed, as upstream.
    initial_user_text: str | None = None
    #: `audio.input.noise_reduction` (or `input_audio_noise_reduction`), echoed only.
    noise_reduction: dict[str, Any] | None = None
    #: `audio.input.channels` as the client declared it (mono only), echoed.
    input_channels: int | None = None
    ref_audio_digest: str | None = field(default=None, repr=False)
    extra_body: dict[str, Any] = field(default_factory=lambda: dict(EXTRA_DEFAULTS))
    #: Declared function tools (as sent) and the `tool_choice`.
    tools: tuple[dict[str, Any], ...] = ()
    tool_choice: Any = "auto"
    extras: dict[str, Any] = field(default_factory=dict)

    @property
    def pcm_format(self) -> str:
        """The PCM the session's input is held as (G.711 is decoded to PCM16 on arrival)."""
        return "pcm16" if self.input_format in G711_FORMATS else self.input_format

    @property
    def bytes_per_sample(self) -> int:
        """Bytes per sample of the held PCM (`pcm_format`)."""
        return BYTES_PER_SAMPLE[self.pcm_format]

    @property
    def wire_bytes_per_sample(self) -> int:
        """Bytes per sample of an append's audio as sent (1 for G.711)."""
        return BYTES_PER_SAMPLE[self.input_format]

    @property
    def auto_response(self) -> bool:
        """`extra_body.auto_response`."""
        return bool(self.extra_body.get("auto_response", True))

    @property
    def force_listen_count(self) -> int:
        """`extra_body.force_listen_count`."""
        value = self.extra_body.get("force_listen_count", 0)
        return value if isinstance(value, int) else 0


def initial_settings(profile: Profile, default_idle_timeout_s: float) -> SessionSettings:
    """The defaults a handshake `session.update` is applied to."""
    return SessionSettings(
        overlap_policy=profile.default_overlap_policy,
        playback_commit_policy=profile.default_playback_commit_policy,
        idle_timeout_s=default_idle_timeout_s,
        input_format=profile.default_input_format,
        input_rate=profile.default_input_rate,
        output_rate=profile.default_output_rate,
        # a model without the native lane waits for commits and `response.create`
        extra_body={**EXTRA_DEFAULTS, "auto_response": profile.auto_response_allowed},
    )


def apply_update(
    raw: dict[str, Any],
    base: SessionSettings,
    *,
    profile: Profile,
    handshake: bool,
    audio_started: bool,
) -> SessionSettings:
    """Decode a `session` object and return `base` updated by it; raises `Reject`."""
    try:
        req = SessionRequest.decode(raw)
    except SchemaError as exc:
        raise Reject.schema(exc) from None
    changes: dict[str, Any] = {}
    if req.model is not None:
        if not handshake and req.model != base.model:
            raise Reject(ErrorCode.MODEL_UPDATE_UNSUPPORTED, "the model cannot change", "model")
        changes["model"] = req.model
    modalities = req.modalities if req.modalities is not None else req.output_modalities
    if modalities is not None:
        changes["modalities"] = tuple(dict.fromkeys(modalities))
    _pinned_fields(req, base, profile, handshake, audio_started, changes)
    _formats(req, base, audio_started, changes)
    _turn_detection(raw, profile, changes)
    _transcription(raw, req, changes)
    _simple_fields(req, base, audio_started, changes)
    _ref_audio(req, base, profile, handshake, changes)
    check_session_tools(req, base, profile, changes)
    if isinstance(raw.get("extra_body"), dict):
        changes["extra_body"] = merge_extra_body(raw["extra_body"], base.extra_body)
    session_fields.take(raw, req, changes)
    session_fields.refused_by_profile(raw, profile)
    extras = {k: v for k, v in raw.items() if k not in _HANDLED}
    if extras:
        changes["extras"] = {**base.extras, **extras}
    return replace(base, **changes)


#: Fields a model may pin: (name, the profile flag that fixes it at open, its code then and its
#: words, the code once audio has started and its words).
_PINNED: Final = (
    (
        "instructions",
        "fixed_persona",
        ErrorCode.PERSONA_UPDATE_UNSUPPORTED,
        "the persona (instructions) cannot change after the session is created",
        ErrorCode.INSTRUCTIONS_UPDATE_UNSUPPORTED,
        "instructions cannot change after the first append",
    ),
    (
        "voice",
        "fixed_voice",
        ErrorCode.VOICE_UPDATE_UNSUPPORTED,
        "the voice cannot change after the session is created",
        ErrorCode.VOICE_UPDATE_AFTER_AUDIO_UNSUPPORTED,
        "the voice cannot change after the first append",
    ),
)


def _pinned_fields(
    req: SessionRequest,
    base: SessionSettings,
    profile: Profile,
    handshake: bool,
    audio_started: bool,
    out: dict[str, Any],
) -> None:
    """The persona and the voice: fixed at open on some profiles, and after the first append."""
    for name, fixed, fixed_code, fixed_words, audio_code, audio_words in _PINNED:
        value = getattr(req, name)
        if name == "voice" and value is None:
            value = session_fields.nested_voice(req)
        if value is None or value == getattr(base, name):
            continue
        if not handshake and getattr(profile, fixed):
            raise Reject(fixed_code, fixed_words, name)
        if audio_started:
            raise Reject(audio_code, audio_words, name)
        out[name] = value


def _formats(
    req: SessionRequest, base: SessionSettings, audio_started: bool, out: dict[str, Any]
) -> None:
    a_in = req.audio.input if req.audio is not None else None
    a_out = req.audio.output if req.audio is not None else None
    fmt = base.input_format
    rates: list[tuple[int, str]] = []
    formats = (
        (req.input_audio_format, "input_audio_format"),
        (a_in.format if a_in is not None else None, "audio.input.format"),
    )
    for value, param in formats:
        if value is not None:
            fmt, rate = input_format(value)
            if rate is not None:
                rates.append((rate, param))
    rate_fields = (
        (req.sample_rate_hz, "sample_rate_hz"),
        (a_in.sample_rate_hz if a_in is not None else None, "audio.input.sample_rate_hz"),
    )
    rates += [(value, param) for value, param in rate_fields if value is not None]
    if len({r for r, _ in rates}) > 1:
        raise Reject(
            ErrorCode.UNSUPPORTED_AUDIO_FORMAT, "conflicting input sample rates", rates[-1][1]
        )
    rate = rates[0][0] if rates else base.input_rate
    if not rates and fmt in G711_FORMATS and fmt != base.input_format:
        rate = G711_DEFAULT_RATE  # G.711 is an 8 kHz code unless a rate is declared
    out_rate = base.output_rate
    if a_out is not None and a_out.sample_rate_hz is not None:
        out_rate = a_out.sample_rate_hz
    if audio_started and (fmt != base.input_format or rate != base.input_rate):
        raise Reject(
            ErrorCode.UNSUPPORTED_AUDIO_FORMAT,
            "the input format and rate cannot change after the first append",
            "input_audio_format" if fmt != base.input_format else "sample_rate_hz",
        )
    out.update(input_format=fmt, input_rate=rate, output_rate=out_rate)


#: What a `server_vad` object's absent fields mean (vLLM-Omni 0.30.0 `turn_detection.py`).
_VAD_DEFAULTS: Final = {
    "type": "server_vad",
    "interrupt_response": True,
    "threshold": 0.5,
    "prefix_padding_ms": 300,
    "silence_duration_ms": 500,
    "min_speech_duration_ms": 96,
}


def _turn_detection(raw: dict[str, Any], profile: Profile, out: dict[str, Any]) -> None:
    """`turn_detection` (or `audio.input.turn_detection`): null, or server VAD if we have one.

    As vLLM-Omni 0.30.0 (`normalize_turn_detection_session_payload`): the overlap policy
    follows from it (`barge_in_on_speech` with `server_vad`, `listen_only` with null) and one
    that contradicts it is refused.
    """
    audio = raw.get("audio")
    a_in = audio.get("input") if isinstance(audio, dict) else None
    if "turn_detection" in raw:
        td = raw["turn_detection"]
    elif isinstance(a_in, dict) and "turn_detection" in a_in:
        td = a_in["turn_detection"]
    else:
        # Upstream also refuses `barge_in_on_speech` without `server_vad`; ours keeps it: the
        # auto lane's overlap gate then judges each append's energy (protocol.md §4.4, §A.7).
        return
    policy = raw.get("overlap_policy")
    wanted = "listen_only" if td is None else "barge_in_on_speech"
    if isinstance(policy, str) and policy != wanted:  # vLLM-Omni 0.30.0 derives the policy
        raise Reject(
            ErrorCode.UNSUPPORTED_TURN_DETECTION,
            f"overlap_policy={policy!r} conflicts with turn_detection; expected {wanted!r}",
            "overlap_policy",
        )
    out["overlap_policy"] = wanted
    if td is None:
        out["turn_detection"] = None
        return
    if not profile.has_server_vad:
        raise Reject(
            ErrorCode.SERVER_VAD_UNAVAILABLE,
            f"profile {profile.name} has no voice activity detector",
            "turn_detection",
        )
    out["turn_detection"] = {**_VAD_DEFAULTS, **td}


def _transcription(raw: dict[str, Any], req: SessionRequest, out: dict[str, Any]) -> None:
    """`input_audio_transcription`, or its GA place `audio.input.transcription` (null: off)."""
    if "input_audio_transcription" in raw:
        out["input_audio_transcription"] = req.input_audio_transcription
        return
    audio = raw.get("audio")
    a_in = audio.get("input") if isinstance(audio, dict) else None
    if not isinstance(a_in, dict) or "transcription" not in a_in:
        return
    value = a_in["transcription"]
    if value is not None and not isinstance(value, dict):
        param = "audio.input.transcription"
        raise Reject(ErrorCode.BAD_EVENT, f"{param} must be an object or null", param)
    out["input_audio_transcription"] = value


def _simple_fields(
    req: SessionRequest, base: SessionSettings, audio_started: bool, out: dict[str, Any]
) -> None:
    if req.overlap_policy is not None:
        out["overlap_policy"] = req.overlap_policy
    for knob in ("overlap_short_ack_ms", "overlap_barge_in_ms"):
        if getattr(req, knob) is not None:
            out[knob] = int(getattr(req, knob))
    if req.overlap_silence_rms is not None:
        out["overlap_silence_rms"] = float(req.overlap_silence_rms)
    if req.playback_commit_policy is not None:
        out["playback_commit_policy"] = req.playback_commit_policy
    if req.temperature is not None:
        out["temperature"] = float(req.temperature)
    caps = (req.max_response_output_tokens, req.max_output_tokens, req.max_tokens)
    cap = next((c for c in caps if c is not None), None)
    if cap is not None:
        out["max_output_tokens"] = cap
    if req.idle_timeout_s is not None:
        out["idle_timeout_s"] = float(req.idle_timeout_s)
    a_out = req.audio.output if req.audio is not None else None
    speed = req.speed if req.speed is not None else a_out.speed if a_out is not None else None
    if speed is not None:
        out["speed"] = float(speed)
    if req.tracing is not None:
        out["tracing"] = req.tracing


def _ref_audio(
    req: SessionRequest,
    base: SessionSettings,
    profile: Profile,
    handshake: bool,
    out: dict[str, Any],
) -> None:
    ref = req.ref_audio
    if ref is None:
        if handshake and profile.ref_audio_required:
            raise Reject(ErrorCode.REF_AUDIO_REQUIRED, "this server needs ref_audio", "ref_audio")
        return
    digest = hashlib.sha256(ref.encode()).hexdigest()
    if not handshake and base.ref_audio_digest is not None and digest != base.ref_audio_digest:
        raise Reject(ErrorCode.REF_AUDIO_UPDATE_UNSUPPORTED, "ref_audio cannot change", "ref_audio")
    out["ref_audio_digest"] = digest
