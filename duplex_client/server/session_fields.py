"""Session fields vLLM-Omni 0.30.0 reads besides the Realtime ones (`engine/duplex/config.py`).

`initial_user_text` (the user's opening turn as text), the voice in `audio.output.voice`, the
input's `noise_reduction` and `channels`, the overlap and playback settings inside
`extra_body` (which win over the session's own fields), and the model plugins' refusals: a
server-owned key in `extra_body` (`private_runtime_config_keys`), Qwen3-Omni's
`auto_response` and reference voice.
"""

from __future__ import annotations

from typing import Any, Final

from duplex_client.protocol.errors import ErrorCode
from duplex_client.protocol.requests import SessionRequest
from duplex_client.server.errors import Reject
from duplex_client.server.profiles import Profile

#: The session's settings `extra_body` may carry too (upstream's `from_event`).
EXTRA_BODY_SETTINGS: Final = (
    "overlap_policy",
    "overlap_short_ack_ms",
    "overlap_barge_in_ms",
    "overlap_silence_rms",
    "playback_commit_policy",
)


def nested_voice(req: SessionRequest) -> str | None:
    """`audio.output.voice`, read where the top-level `voice` is absent."""
    a_out = req.audio.output if req.audio is not None else None
    return a_out.voice if a_out is not None else None


def take(raw: dict[str, Any], req: SessionRequest, out: dict[str, Any]) -> None:
    """Add this update's upstream session fields to `out` (the schema checked their types)."""
    if req.initial_user_text is not None:
        out["initial_user_text"] = req.initial_user_text or None
    audio = raw.get("audio")
    a_in = audio.get("input") if isinstance(audio, dict) else None
    # one setting, two spellings; the GA place wins, and null clears it (as upstream)
    for where, key in ((raw, "input_audio_noise_reduction"), (a_in, "noise_reduction")):
        if isinstance(where, dict) and key in where:
            value = where[key]
            if value is not None and not isinstance(value, dict):
                param = "input_audio_noise_reduction" if where is raw else "audio.input." + key
                raise Reject(ErrorCode.BAD_EVENT, f"{param} must be an object or null", param)
            out["noise_reduction"] = value
    a_req = req.audio.input if req.audio is not None else None
    if a_req is not None and a_req.channels is not None:
        out["input_channels"] = a_req.channels
    extra = raw.get("extra_body")
    if isinstance(extra, dict):
        for key in EXTRA_BODY_SETTINGS:
            if extra.get(key) is not None:
                out[key] = extra[key]


def refused_by_profile(raw: dict[str, Any], profile: Profile) -> None:
    """A model plugin's refusals of a session object (vLLM-Omni 0.30.0's plugins)."""
    extra = raw.get("extra_body")
    if isinstance(extra, dict):
        owned = sorted(profile.private_runtime_keys.intersection(extra))
        if owned:  # `engine/duplex/plugin.py` `reject_private_runtime_keys`
            raise Reject(
                ErrorCode.INVALID_DUPLEX_RUNTIME_CONFIG,
                "duplex runtime configuration is server-owned: " + ", ".join(owned),
                "extra_body." + owned[0],
            )
    # Qwen3-Omni's `validate_client_extra_body` and `runtime_config_for_update`
    if not profile.auto_response_allowed and isinstance(extra, dict) and extra.get("auto_response"):
        raise Reject(
            ErrorCode.INVALID_DUPLEX_RUNTIME_CONFIG,
            "this model requires server VAD or explicit commits; native auto_response is "
            "unsupported",
            "extra_body.auto_response",
        )
    if not profile.ref_audio_allowed and raw.get("ref_audio"):
        raise Reject(
            ErrorCode.INVALID_DUPLEX_RUNTIME_CONFIG,
            "this model does not support reference voice audio",
            "ref_audio",
        )
