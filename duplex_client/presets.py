"""Session presets: MiniCPM-o 4.5, JoyAI-, AURA-, PersonaPlex- and Nemotron-style (§2.1, §9.2)."""

from __future__ import annotations

from collections.abc import Callable
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


def personaplex(*, voice: str = "NATF2.pt", persona: str = "", **overrides: Any) -> SessionConfig:
    """PersonaPlex-style: 24 kHz `pcm_f32le` in, model-owned turns (no commits), a voice prompt.

    `voice` names one of the deployment's voice prompts; `persona` becomes the instructions.
    """
    base = SessionConfig(
        input_audio_format="pcm_f32le",
        input_sample_rate_hz=24000,
        turn_detection=None,
        voice=voice,
        instructions=persona,
        extra_body={"auto_response": True},
    )
    return base.with_overrides(**overrides)


def nemotron(**overrides: Any) -> SessionConfig:
    """Nemotron VoiceChat-style: 16 kHz PCM in one continuous stream (`session.end` ends it)."""
    base = SessionConfig(turn_detection=None, extra_body={"auto_response": True})
    return base.with_overrides(**overrides)


PRESETS = {
    "minicpmo": minicpmo_4_5,
    "joyai": joyai,
    "aura": aura,
    "personaplex": personaplex,
    "nemotron": nemotron,
}
#: Presets built from their function alone (no reference voice, no manual lane).
PLAIN: dict[str, Callable[..., SessionConfig]] = {
    "aura": aura,
    "personaplex": personaplex,
    "nemotron": nemotron,
}
#: Presets with a reference-server profile of the same name (others use `minicpmo`).
PROFILE_PRESETS = frozenset({"aura", "joyai", "personaplex", "nemotron"})
#: The model each preset names (`model=` in the URL and `session.update`); None names no
#: model, so the server uses the one it serves.
PRESET_MODELS: dict[str, str | None] = {
    "minicpmo": "openbmb/MiniCPM-o-4_5",
    "joyai": None,
    "aura": None,
    "personaplex": "nvidia/personaplex-7b-v1",
    "nemotron": None,
    "none": None,
}


def preset_model(preset: str) -> str | None:
    """The model a preset names (None: none, the server's own)."""
    return PRESET_MODELS.get(preset)


def preset_config(
    preset: str,
    *,
    turn: str | None = None,
    manual_commit: bool = False,
    ref_audio: str | None = None,
    **overrides: Any,
) -> SessionConfig:
    """TEMPORARY until the families table lands: the old two conversions, side by side."""
    if turn is None:  # a file run: the preset's own turns
        extra = dict(overrides.pop("extra_body", {}) or {})
        if manual_commit:
            extra["auto_response"] = False
        if extra:
            overrides["extra_body"] = extra
        if preset == "minicpmo":
            return minicpmo_4_5(ref_audio=ref_audio, **overrides)
        if preset == "joyai":
            return joyai(manual=manual_commit, **overrides)
        base = PLAIN[preset]() if preset in PLAIN else SessionConfig()
        if ref_audio is not None:
            overrides["ref_audio"] = ref_audio
        return base.with_overrides(**overrides)
    if preset == "minicpmo":
        config = minicpmo_4_5(ref_audio=ref_audio, **overrides)
    elif preset == "joyai":
        config = joyai(manual=turn != "vad", **overrides)
    else:
        plain = PLAIN.get(preset)
        config = plain() if plain is not None else SessionConfig()
        if ref_audio is not None:
            overrides["ref_audio"] = ref_audio
        config = config.with_overrides(**overrides)
    if turn == "vad" and not config.turn_detection:
        config = config.with_overrides(
            turn_detection=dict(SERVER_VAD), overlap_policy="barge_in_on_speech"
        )
    elif turn != "vad" and config.turn_detection:
        config = config.with_overrides(turn_detection=None)
    return config
