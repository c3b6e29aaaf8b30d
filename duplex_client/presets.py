"""Session presets: MiniCPM-o 4.5, JoyAI-, AURA-, PersonaPlex- and Nemotron-style (§2.1, §9.2).

One preset per model family (`duplex_client.families`); `preset_config` turns a family and a
turn style into the `SessionConfig` a file run or a live run sends.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from duplex_client.client.config import SessionConfig, ref_audio_data_url
from duplex_client.families import (
    FAMILIES,
    FAMILY_NAMES,
    NO_PRESET,
    PRESET_CHOICES,
    TURN_STYLES,
    ModelFamily,
    family,
    own_turn,
)

#: Server VAD settings used by the JoyAI-style preset (protocol.md §9.6).
SERVER_VAD: dict[str, Any] = {
    "type": "server_vad",
    "threshold": 0.5,
    "prefix_padding_ms": 300,
    "silence_duration_ms": 500,
    "interrupt_response": True,
}

_Preset = TypeVar("_Preset", bound=Callable[..., SessionConfig])
#: Each family's own preset function, registered by `_preset_of` (others: `family_config`).
_OWN: dict[str, Callable[..., SessionConfig]] = {}


def _preset_of(name: str) -> Callable[[_Preset], _Preset]:
    """Register the decorated function as family `name`'s preset."""
    family(name)  # a typo fails at import

    def register(function: _Preset) -> _Preset:
        _OWN[name] = function
        return function

    return register


def family_config(name: str, **overrides: Any) -> SessionConfig:
    """The generic preset of a family: model-owned turns in its native formats and rates."""
    f = family(name)
    base = SessionConfig(turn_detection=None, extra_body={"auto_response": True})
    if (f.input_format, f.input_rate_hz) != (base.input_audio_format, base.input_sample_rate_hz):
        base = base.with_overrides(
            input_audio_format=f.input_format, input_sample_rate_hz=f.input_rate_hz
        )
    if f.output_rate_hz != base.output_sample_rate_hz:
        base = base.with_overrides(output_sample_rate_hz=f.output_rate_hz)
    return base.with_overrides(**overrides)


@_preset_of("minicpmo")
def minicpmo_4_5(ref_audio: str | Path | bytes | None = None, **overrides: Any) -> SessionConfig:
    """MiniCPM-o 4.5: model-owned listen/speak per unit, `listen_only`, `ack_only`.

    As vLLM-Omni 0.30.0's own preset (`vllm_omni/clients/minicpmo_4_5.py`): no
    `native_duplex` any more (PR #7413 dropped it from the session), `force_listen_count: 0`.
    `ref_audio` (WAV bytes, a WAV path or a data URL) is the voice; a real deployment refuses
    a session with audio output without one (`ref_audio_required`, its plugin's
    `prepare_runtime_config`); the bundled reference server supplies a built-in voice.
    """
    base = SessionConfig(
        turn_detection=None,
        overlap_policy="listen_only",
        playback_commit_policy="ack_only",
        ref_audio=ref_audio_data_url(ref_audio) if ref_audio is not None else None,
        extra_body={"auto_response": True, "force_listen_count": 0},
    )
    return base.with_overrides(**overrides)


@_preset_of("joyai")
def joyai(*, manual: bool = False, **overrides: Any) -> SessionConfig:
    """JoyAI-style speech turns with camera observations: server VAD, or manual commits."""
    return _speech_turns(manual, vad_answers=True).with_overrides(**overrides)


@_preset_of("qwen3-turn")
def qwen3_turn(*, manual: bool = True, **overrides: Any) -> SessionConfig:
    """Qwen3-Omni turn-based: commit + `response.create` turns, or server VAD turns.

    Its vLLM-Omni plugin refuses `auto_response` (both lanes send `false`) and a reference
    voice; camera frames go as `input_image` items, which the stream sends by itself.
    """
    return _speech_turns(manual, vad_answers=False).with_overrides(**overrides)


def _speech_turns(manual: bool, *, vad_answers: bool) -> SessionConfig:
    """A turn-based model's session: manual commits, or server VAD turns.

    `vad_answers`: a VAD-closed turn is answered by itself (`auto_response`), else the
    client asks with `response.create`.
    """
    if manual:
        return SessionConfig(
            turn_detection=None,
            playback_commit_policy="ack_only",
            extra_body={"auto_response": False},
        )
    return SessionConfig(
        turn_detection=dict(SERVER_VAD),
        overlap_policy="barge_in_on_speech",
        playback_commit_policy="ack_only",
        extra_body={"auto_response": vad_answers},
    )


@_preset_of("aura")
def aura(**overrides: Any) -> SessionConfig:
    """AURA-style: video required, audio optional, one append per unit (server defaults)."""
    return family_config("aura", **overrides)


@_preset_of("personaplex")
def personaplex(*, voice: str = "NATF2.pt", persona: str = "", **overrides: Any) -> SessionConfig:
    """PersonaPlex-style: 24 kHz `pcm_f32le` in, model-owned turns (no commits), a voice prompt.

    `voice` names one of the deployment's voice prompts; `persona` becomes the instructions.
    """
    return family_config("personaplex", voice=voice, instructions=persona).with_overrides(
        **overrides
    )


@_preset_of("nemotron")
def nemotron(**overrides: Any) -> SessionConfig:
    """Nemotron VoiceChat: 16 kHz `pcm_f32le` in 80 ms frames, 22.05 kHz PCM16 out, one
    continuous stream that trailing silence and `session.close` end (vLLM-Omni 0.30.0
    `clients/nemotron_voicechat.py`; protocol.md §9.2)."""
    return family_config("nemotron", **overrides)


def _preset_function(f: ModelFamily) -> Callable[..., SessionConfig]:
    """A family's preset: its own function, else the generic one bound to its name."""
    own = _OWN.get(f.name)
    return own if own is not None else partial(family_config, f.name)


#: Every family's preset function, in table order.
PRESETS: dict[str, Callable[..., SessionConfig]] = {f.name: _preset_function(f) for f in FAMILIES}
#: Presets built from their function alone (no reference voice, no manual lane).
PLAIN: dict[str, Callable[..., SessionConfig]] = {
    f.name: PRESETS[f.name] for f in FAMILIES if f.model_owned_turns and not f.reference_voice
}
#: Presets with a reference-server profile of the same name (others use the default family's).
PROFILE_PRESETS = frozenset(f.name for f in FAMILIES if f.reference_profile)
#: The model each preset names (`model=` in the URL and `session.update`); None names no
#: model, so the server uses the one it serves.
PRESET_MODELS: dict[str, str | None] = {
    **{f.name: f.default_model for f in FAMILIES},
    NO_PRESET: None,
}


def preset_model(preset: str) -> str | None:
    """The model a preset names (None: none, the server's own)."""
    return PRESET_MODELS.get(preset)


def preset_config(
    preset: str,
    *,
    turn: str | None = None,
    manual_commit: bool = False,
    ref_audio: str | Path | bytes | None = None,
    **overrides: Any,
) -> SessionConfig:
    """The session config of a preset (a family, or `none`) run with a turn style.

    `turn` is `model`, `vad` or `ptt` (live's `--turn`); None: the preset's own
    (`families.own_turn`: joyai's server VAD unless `manual_commit`, else `model`). `vad`
    adds server VAD with barge-in where the preset has no `turn_detection`; the others
    remove it. `manual_commit` turns `auto_response` off (commit, then `response.create`).
    `ref_audio` (WAV bytes, a path or a data URL) is sent where the family takes a voice and
    as given on the others, except speech-turn families (joyai), which send none. The
    `overrides` are `SessionConfig` fields; an `extra_body` is merged into the preset's.
    """
    if preset not in PRESET_CHOICES:
        raise ValueError(f"preset must be one of {', '.join(PRESET_CHOICES)}, got {preset!r}")
    if turn is None:
        turn = own_turn(preset, manual_commit=manual_commit)
    elif turn not in TURN_STYLES:
        raise ValueError(f"turn must be one of {', '.join(TURN_STYLES)}, got {turn!r}")
    extra = dict(overrides.pop("extra_body", None) or {})
    if manual_commit:
        extra["auto_response"] = False
    if extra:
        overrides["extra_body"] = extra
    voice = ref_audio_data_url(ref_audio) if ref_audio is not None else None
    f = family(preset) if preset in FAMILY_NAMES else None
    if f is not None and f.reference_voice:
        config = PRESETS[f.name](ref_audio=voice, **overrides)
    elif f is not None and not f.model_owned_turns:  # speech turns: no reference voice
        config = PRESETS[f.name](manual=manual_commit or turn != "vad", **overrides)
    else:
        base = PRESETS[f.name]() if f is not None else SessionConfig()
        if voice is not None:
            overrides["ref_audio"] = voice
        config = base.with_overrides(**overrides)
    if turn == "vad" and not config.turn_detection:
        config = config.with_overrides(
            turn_detection=dict(SERVER_VAD), overlap_policy="barge_in_on_speech"
        )
    elif turn != "vad" and config.turn_detection:
        config = config.with_overrides(turn_detection=None)
    return config
