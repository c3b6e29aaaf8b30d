"""`session.update` validation and the effective session configuration (protocol.md §2.1, §2.4)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from typing import Any, Final

from duplex_client.protocol.codec import CodecError, b64decode
from duplex_client.protocol.errors import ErrorCode
from duplex_client.server.errors import Reject
from duplex_client.server.knobs import EXTRA_DEFAULTS, validate_extra_body
from duplex_client.server.profiles import Profile

#: Input encodings we accept (aliases → canonical) and their bytes per sample (§2.1).
INPUT_FORMATS: Final = {"pcm16": "pcm16", "pcm_s16le": "pcm16", "s16le": "pcm16"} | {
    "pcm_f32le": "pcm_f32le"
}
BYTES_PER_SAMPLE: Final = {"pcm16": 2, "pcm_f32le": 4}
INPUT_RATES: Final = frozenset({8000, 16000, 22050, 24000, 32000, 44100, 48000})
OUTPUT_RATES: Final = frozenset({16000, 24000, 48000})
OVERLAP_POLICIES: Final = ("listen_only", "barge_in_on_speech")
PLAYBACK_POLICIES: Final = ("ack_only", "commit_all_on_done")
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
        "audio",
        "turn_detection",
        "overlap_policy",
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
    playback_commit_policy: str = "commit_all_on_done"
    instructions: str | None = None
    voice: str | None = None
    temperature: float | None = None
    max_output_tokens: int | str | None = None
    idle_timeout_s: float = 300.0
    ref_audio_digest: str | None = field(default=None, repr=False)
    extra_body: dict[str, Any] = field(default_factory=lambda: dict(EXTRA_DEFAULTS))
    extras: dict[str, Any] = field(default_factory=dict)

    @property
    def bytes_per_sample(self) -> int:
        """Input bytes per sample."""
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

    def to_wire(self) -> dict[str, Any]:
        """The configuration fields of the `session` object (ref_audio is never echoed)."""
        out: dict[str, Any] = dict(self.extras)
        out.update(
            {
                "model": self.model,
                "modalities": list(self.modalities),
                "input_audio_format": self.input_format,
                "output_audio_format": "pcm16",
                "sample_rate_hz": self.input_rate,
                "audio": {
                    "input": {
                        "format": {"type": "audio/pcm", "rate": self.input_rate},
                        "sample_rate_hz": self.input_rate,
                        "turn_detection": self.turn_detection,
                    },
                    "output": {
                        "format": {"type": "audio/pcm", "rate": self.output_rate},
                        "sample_rate_hz": self.output_rate,
                    },
                },
                "turn_detection": self.turn_detection,
                "overlap_policy": self.overlap_policy,
                "playback_commit_policy": self.playback_commit_policy,
                "instructions": self.instructions,
                "voice": self.voice,
                "temperature": self.temperature,
                "max_response_output_tokens": self.max_output_tokens,
                "idle_timeout_s": self.idle_timeout_s,
                "extra_body": dict(self.extra_body),
            }
        )
        return out


def initial_settings(profile: Profile, default_idle_timeout_s: float) -> SessionSettings:
    """The defaults a handshake `session.update` is applied to."""
    return SessionSettings(
        overlap_policy=profile.default_overlap_policy,
        playback_commit_policy=profile.default_playback_commit_policy,
        idle_timeout_s=default_idle_timeout_s,
    )


def apply_update(
    raw: Any,
    base: SessionSettings,
    *,
    profile: Profile,
    handshake: bool,
    audio_started: bool,
) -> SessionSettings:
    """Validate a `session` object and return `base` updated by it; raises `Reject`."""
    if not isinstance(raw, dict):
        raise Reject(ErrorCode.BAD_EVENT, "session must be an object", "session")
    changes: dict[str, Any] = {}
    _model(raw, base, handshake, changes)
    _formats(raw, base, audio_started, changes)
    _turn_detection(raw, profile, changes)
    _simple_fields(raw, base, audio_started, changes)
    _ref_audio(raw, base, profile, handshake, changes)
    if "extra_body" in raw and raw["extra_body"] is not None:
        changes["extra_body"] = validate_extra_body(raw["extra_body"], base.extra_body)
    extras = {k: v for k, v in raw.items() if k not in _HANDLED}
    if extras:
        changes["extras"] = {**base.extras, **extras}
    return replace(base, **changes)


def _str(raw: dict[str, Any], key: str) -> str | None:
    value = raw.get(key)
    if value is not None and not isinstance(value, str):
        raise Reject(ErrorCode.BAD_EVENT, f"{key} must be a string", key)
    return value


def _model(
    raw: dict[str, Any], base: SessionSettings, handshake: bool, out: dict[str, Any]
) -> None:
    model = _str(raw, "model")
    if model is not None:
        if not handshake and model != base.model:
            raise Reject(ErrorCode.MODEL_UPDATE_UNSUPPORTED, "the model cannot change", "model")
        out["model"] = model
    modalities = raw.get("modalities")
    if modalities is not None:
        if (
            not isinstance(modalities, list)
            or not modalities
            or any(m not in ("audio", "text") for m in modalities)
        ):
            raise Reject(
                ErrorCode.BAD_EVENT, "modalities must list audio and/or text", "modalities"
            )
        out["modalities"] = tuple(dict.fromkeys(modalities))


def _rate(value: Any, param: str, allowed: frozenset[int]) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value not in allowed:
        raise Reject(
            ErrorCode.UNSUPPORTED_AUDIO_FORMAT, f"unsupported sample rate {value!r}", param
        )
    return value


def _input_format(value: Any, param: str) -> tuple[str, int | None]:
    if isinstance(value, dict):
        kind, rate = value.get("type"), value.get("rate")
        if kind not in ("audio/pcm", "pcm16"):
            raise Reject(ErrorCode.UNSUPPORTED_AUDIO_FORMAT, f"unsupported format {kind!r}", param)
        return "pcm16", None if rate is None else _rate(rate, param, INPUT_RATES)
    if isinstance(value, str) and value in INPUT_FORMATS:
        return INPUT_FORMATS[value], None
    raise Reject(ErrorCode.UNSUPPORTED_AUDIO_FORMAT, f"unsupported format {value!r}", param)


def _is_pcm16(value: Any) -> bool:
    if isinstance(value, str):
        return INPUT_FORMATS.get(value) == "pcm16"
    return isinstance(value, dict) and value.get("type") in ("audio/pcm", "pcm16")


def _formats(
    raw: dict[str, Any], base: SessionSettings, audio_started: bool, out: dict[str, Any]
) -> None:
    audio = raw.get("audio")
    if audio is not None and not isinstance(audio, dict):
        raise Reject(ErrorCode.BAD_EVENT, "audio must be an object", "audio")
    a_in = (audio or {}).get("input") or {}
    a_out = (audio or {}).get("output") or {}
    if not isinstance(a_in, dict) or not isinstance(a_out, dict):
        raise Reject(ErrorCode.BAD_EVENT, "audio.input/output must be objects", "audio")
    fmt = base.input_format
    rates: list[tuple[int, str]] = []
    formats = (
        (raw.get("input_audio_format"), "input_audio_format"),
        (a_in.get("format"), "audio.input.format"),
    )
    for value, param in formats:
        if value is not None:
            fmt, rate = _input_format(value, param)
            if rate is not None:
                rates.append((rate, param))
    rate_fields = (
        (raw.get("sample_rate_hz"), "sample_rate_hz"),
        (a_in.get("sample_rate_hz"), "audio.input.sample_rate_hz"),
    )
    for value, param in rate_fields:
        if value is not None:
            rates.append((_rate(value, param, INPUT_RATES), param))
    if len({r for r, _ in rates}) > 1:
        raise Reject(
            ErrorCode.UNSUPPORTED_AUDIO_FORMAT, "conflicting input sample rates", rates[-1][1]
        )
    rate = rates[0][0] if rates else base.input_rate
    out_fmt = raw.get("output_audio_format")
    if out_fmt is not None and not _is_pcm16(out_fmt):
        raise Reject(
            ErrorCode.UNSUPPORTED_AUDIO_FORMAT, "output is pcm16 only", "output_audio_format"
        )
    out_rate = base.output_rate
    if a_out.get("sample_rate_hz") is not None:
        out_rate = _rate(a_out["sample_rate_hz"], "audio.output.sample_rate_hz", OUTPUT_RATES)
    if audio_started and (fmt != base.input_format or rate != base.input_rate):
        raise Reject(
            ErrorCode.UNSUPPORTED_AUDIO_FORMAT,
            "the input format and rate cannot change after the first append",
            "input_audio_format" if fmt != base.input_format else "sample_rate_hz",
        )
    out.update(input_format=fmt, input_rate=rate, output_rate=out_rate)


def _turn_detection(raw: dict[str, Any], profile: Profile, out: dict[str, Any]) -> None:
    audio_raw = raw.get("audio")
    audio: dict[str, Any] = audio_raw if isinstance(audio_raw, dict) else {}
    a_in_raw = audio.get("input")
    a_in: dict[str, Any] = a_in_raw if isinstance(a_in_raw, dict) else {}
    present = "turn_detection" in raw or "turn_detection" in a_in
    if not present:
        return
    td = raw["turn_detection"] if "turn_detection" in raw else a_in.get("turn_detection")
    if td is None:
        out["turn_detection"] = None
        return
    if (
        not isinstance(td, dict)
        or td.get("type") != "server_vad"
        or td.get("interrupt_response", True) is not True
    ):
        raise Reject(
            ErrorCode.UNSUPPORTED_TURN_DETECTION,
            "turn_detection must be null or server_vad with interrupt_response true",
            "turn_detection",
        )
    if not profile.has_server_vad:
        raise Reject(
            ErrorCode.SERVER_VAD_UNAVAILABLE,
            f"profile {profile.name} has no voice activity detector",
            "turn_detection",
        )
    out["turn_detection"] = dict(td)


def _simple_fields(
    raw: dict[str, Any], base: SessionSettings, audio_started: bool, out: dict[str, Any]
) -> None:
    policies = (
        ("overlap_policy", OVERLAP_POLICIES),
        ("playback_commit_policy", PLAYBACK_POLICIES),
    )
    for key, allowed in policies:
        value = raw.get(key)
        if value is not None:
            if value not in allowed:
                raise Reject(ErrorCode.BAD_EVENT, f"{key} must be one of {allowed}", key)
            out[key] = value
    instructions = _str(raw, "instructions")
    if instructions is not None and instructions != base.instructions:
        if audio_started:
            raise Reject(
                ErrorCode.INSTRUCTIONS_UPDATE_UNSUPPORTED,
                "instructions cannot change after the first append",
                "instructions",
            )
        out["instructions"] = instructions
    voice = _str(raw, "voice")
    if voice is not None and voice != base.voice:
        if audio_started:
            raise Reject(
                ErrorCode.VOICE_UPDATE_AFTER_AUDIO_UNSUPPORTED,
                "the voice cannot change after the first append",
                "voice",
            )
        out["voice"] = voice
    temp = raw.get("temperature")
    if temp is not None:
        if isinstance(temp, bool) or not isinstance(temp, int | float) or not 0 <= temp <= 2:
            raise Reject(ErrorCode.BAD_EVENT, "temperature must be within 0..2", "temperature")
        out["temperature"] = float(temp)
    cap = raw.get("max_response_output_tokens")
    if cap is not None:
        if cap != "inf" and (isinstance(cap, bool) or not isinstance(cap, int) or cap <= 0):
            raise Reject(
                ErrorCode.BAD_EVENT,
                "max_response_output_tokens must be a positive integer or 'inf'",
                "max_response_output_tokens",
            )
        out["max_output_tokens"] = cap
    idle = raw.get("idle_timeout_s")
    if idle is not None:
        if isinstance(idle, bool) or not isinstance(idle, int | float) or idle <= 0:
            raise Reject(ErrorCode.BAD_EVENT, "idle_timeout_s must be positive", "idle_timeout_s")
        out["idle_timeout_s"] = float(idle)


def _ref_audio(
    raw: dict[str, Any],
    base: SessionSettings,
    profile: Profile,
    handshake: bool,
    out: dict[str, Any],
) -> None:
    ref = raw.get("ref_audio")
    if ref is None:
        if handshake and profile.ref_audio_required:
            raise Reject(ErrorCode.REF_AUDIO_REQUIRED, "this server needs ref_audio", "ref_audio")
        return
    if not isinstance(ref, str) or not ref.startswith("data:") or ";base64," not in ref[:256]:
        raise Reject(
            ErrorCode.UNSUPPORTED_REF_AUDIO_PATH,
            "ref_audio must be a data:audio/...;base64 URL, not a path or URL",
            "ref_audio",
        )
    try:
        b64decode(ref.split(",", 1)[1])
    except CodecError:
        raise Reject(
            ErrorCode.UNSUPPORTED_REF_AUDIO_PATH, "ref_audio is not valid base64", "ref_audio"
        ) from None
    digest = hashlib.sha256(ref.encode()).hexdigest()
    if not handshake and base.ref_audio_digest is not None and digest != base.ref_audio_digest:
        raise Reject(ErrorCode.REF_AUDIO_UPDATE_UNSUPPORTED, "ref_audio cannot change", "ref_audio")
    out["ref_audio_digest"] = digest
