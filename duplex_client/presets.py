"""Session presets: MiniCPM-o 4.5, JoyAI-style and AURA-style (protocol.md §2.1, §2.4)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from duplex_client.client.config import SessionConfig, ref_audio_data_url

#: Server VAD settings used by the JoyAI-style preset (protocol.md §9.6).
SERVER_VAD: dict[str, Any] = {
    "type": "server_vad",
    "threshold": 0.5,
    "prefix_padding_ms": 300,
    "silence_duration_ms": 500,
    "interrupt_response": True,
}


def minicpmo_4_5(ref_audio: str | Path | bytes | None = None, **overrides: Any) -> SessionConfig:
    """MiniCPM-o 4.5: model-owned listen/speak per unit, `listen_only`, `ack_only`.

    `ref_audio` (WAV bytes, a WAV path or a data URL) is required by real deployments;
    the bundled reference server supplies a built-in voice when it is omitted.
    """
    base = SessionConfig(
        turn_detection=None,
        overlap_policy="listen_only",
        playback_commit_policy="ack_only",
        ref_audio=ref_audio_data_url(ref_audio) if ref_audio is not None else None,
        extra_body={"auto_response": True, "native_duplex": True, "force_listen_count": 0},
    )
    return base.with_overrides(**overrides)


def joyai(*, manual: bool = False, **overrides: Any) -> SessionConfig:
    """JoyAI-style speech turns with camera observations: server VAD, or manual commits."""
    if manual:
        base = SessionConfig(
            turn_detection=None,
            playback_commit_policy="ack_only",
            extra_body={"auto_response": False},
        )
    else:
        base = SessionConfig(
            turn_detection=dict(SERVER_VAD),
            overlap_policy="barge_in_on_speech",
            playback_commit_policy="ack_only",
            extra_body={"auto_response": True},
        )
    return base.with_overrides(**overrides)


def aura(**overrides: Any) -> SessionConfig:
    """AURA-style: video required, audio optional, one append per unit (server defaults)."""
    return SessionConfig(turn_detection=None, extra_body={"auto_response": True}).with_overrides(
        **overrides
    )


PRESETS = {"minicpmo": minicpmo_4_5, "joyai": joyai, "aura": aura}
#: The model each preset names (`model=` in the URL and `session.update`); None names no
#: model, so the server uses the one it serves.
PRESET_MODELS: dict[str, str | None] = {
    "minicpmo": "openbmb/MiniCPM-o-4_5",
    "joyai": None,
    "aura": None,
    "none": None,
}


def preset_model(preset: str) -> str | None:
    """The model a preset names (None: none, the server's own)."""
    return PRESET_MODELS.get(preset)
