"""The model families this project knows, in one table: what each serves and what a client sends.

The lists of families derive from `FAMILIES`: the CLI's `--preset` and `serve --profile`
choices, the presets (`duplex_client.presets`), live mode's automatic choice, the embedded
server's profile, the default model, the README's table and the client-facing side of the
reference server's profiles (`duplex_client.server.profiles`, checked against this table by
a test). Adding a family means adding its entry here, a server profile if `duplex-cli serve`
should emulate it, and a preset function in `presets` if its session needs more than the
generic one (a reference voice or speech turns always do: `preset_config` hands them
`ref_audio` or `manual`); then the README's table and the docs' lists, which tests compare
with this table (protocol.md §9.2 describes the profiles).

Pure data: no I/O, no asyncio, no client or server imports.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, Literal

from duplex_client.protocol.capabilities import DEFAULT_CHUNK_PERIOD_MS, DEFAULT_FIRST_UNIT_MS

__all__ = [
    "COMMIT_FREE",
    "DEFAULT_FAMILY",
    "DEFAULT_MODEL",
    "FAMILIES",
    "FAMILY_NAMES",
    "LIVE_PRESET_CHOICES",
    "NO_PRESET",
    "PRESET_CHOICES",
    "PROFILE_FAMILIES",
    "TURN_STYLES",
    "ModelFamily",
    "UnknownFamilyError",
    "auto_preset",
    "default_model",
    "embedded_profile",
    "family",
    "markdown_table",
    "own_turn",
    "preset_family",
]

Lifecycle = Literal["model_turn", "continuous_stream"]
InputFormat = Literal["pcm16", "pcm_f32le"]
EventNames = Literal["ga", "beta"]


@dataclass(frozen=True, slots=True)
class ModelFamily:
    """One model family: its CLI name, default model, unit grid, formats and turn rules."""

    #: The `--preset` / `serve --profile` choice, and the key everywhere else.
    name: str
    #: The human name, for tables and messages.
    title: str
    #: The model a session names by default (`model=` in the URL); None: the server's own.
    default_model: str | None
    #: The first audio unit's length as the family serves it (`first_unit_ms`).
    first_unit_ms: int
    #: Every later audio unit's length (`chunk_period_ms`).
    chunk_period_ms: int
    #: The family's native input PCM (`input_audio_format`): the preset sends it.
    input_format: InputFormat
    #: The native input rate in Hz.
    input_rate_hz: int
    #: The rate answer audio comes back at.
    output_rate_hz: int
    #: `model_turn`: responses end; `continuous_stream`: one response for the whole session,
    #: drained at `session.close` after trailing silence (no `session.end`, protocol.md §9.2).
    lifecycle: Lifecycle
    #: The model decides listen/speak itself (`model_native_duplex`); False: speech turns
    #: closed by server VAD or a client commit (`turn_based_duplex`).
    model_owned_turns: bool
    #: The client may commit turns (False: it sends none; `client.takes_commits`).
    client_commits: bool
    #: Push-to-talk turns work: audio while the key is held, a commit on release.
    push_to_talk: bool
    #: The server takes `turn_detection: server_vad` (given a VAD engine).
    server_vad: bool
    #: The preset takes a reference voice (`ref_audio`), which real deployments require.
    reference_voice: bool
    #: Input modalities every append must carry.
    required_modalities: tuple[str, ...]
    #: Input modalities an append may carry.
    optional_modalities: tuple[str, ...]
    #: A playing answer can be interrupted (`supports_barge_in`).
    barge_in: bool
    #: A dropped session can be resumed (`supports_session_resume`).
    session_resume: bool
    #: A truncating ack or `conversation.item.truncate` cuts the stored answer.
    audio_truncate: bool
    #: The model calls functions (`supports_tools`, protocol.md §11).
    tools: bool
    #: `duplex-cli serve` has a profile of this name (the embedded server uses it).
    reference_profile: bool
    #: The event-name generation the family's server speaks (its profile's default).
    event_names: EventNames = "ga"
    #: Camera frames go as `conversation.item.create` `input_image` items, never on appends
    #: (`supports_image_input`); the session's turns end at commits and `response.create`.
    image_items: bool = False


FAMILIES: Final[tuple[ModelFamily, ...]] = (
    ModelFamily(
        name="minicpmo",
        title="MiniCPM-o 4.5",
        default_model="openbmb/MiniCPM-o-4_5",
        first_unit_ms=DEFAULT_FIRST_UNIT_MS,
        chunk_period_ms=DEFAULT_CHUNK_PERIOD_MS,
        input_format="pcm16",
        input_rate_hz=16000,
        output_rate_hz=24000,
        lifecycle="model_turn",
        model_owned_turns=True,
        # A commit ends the turn (it pads the open unit); it requests nothing (protocol.md §3.4).
        client_commits=True,
        push_to_talk=True,
        # vLLM-Omni serves server VAD where barge-in is supported; the model keeps the turns.
        server_vad=True,
        reference_voice=True,
        required_modalities=(),
        optional_modalities=("audio", "video"),
        barge_in=True,
        session_resume=True,
        audio_truncate=True,
        tools=False,
        reference_profile=True,
    ),
    ModelFamily(
        name="joyai",
        title="JoyAI-style",
        default_model=None,
        # The product spec's preset table gives the chat lane the default grid; no upstream
        # source we have names another.
        first_unit_ms=DEFAULT_FIRST_UNIT_MS,
        chunk_period_ms=DEFAULT_CHUNK_PERIOD_MS,
        input_format="pcm16",
        input_rate_hz=16000,
        output_rate_hz=24000,
        lifecycle="model_turn",
        model_owned_turns=False,
        client_commits=True,
        push_to_talk=True,
        server_vad=True,
        # Speech turns: the presets send no reference voice, even when one is given.
        reference_voice=False,
        required_modalities=(),
        optional_modalities=("audio", "video"),
        barge_in=True,
        session_resume=True,
        audio_truncate=True,
        # Upstream's chat fallback forwards tools to the chat model but emits no calls.
        tools=False,
        reference_profile=True,
    ),
    ModelFamily(
        name="aura",
        title="AURA-style",
        default_model=None,
        first_unit_ms=DEFAULT_FIRST_UNIT_MS,
        chunk_period_ms=DEFAULT_CHUNK_PERIOD_MS,
        input_format="pcm16",
        input_rate_hz=16000,
        output_rate_hz=24000,
        lifecycle="model_turn",
        model_owned_turns=True,
        client_commits=True,
        push_to_talk=True,
        # Our profile has no VAD. protocol.md §9.2 says vLLM-Omni serves `server_vad` where
        # barge-in is supported, which AURA's is; no source we have shows AURA taking it.
        server_vad=False,
        reference_voice=False,
        required_modalities=("video",),
        optional_modalities=("audio",),
        barge_in=True,
        session_resume=True,
        audio_truncate=True,
        tools=False,
        reference_profile=True,
    ),
    ModelFamily(
        name="personaplex",
        title="PersonaPlex-style",
        default_model="nvidia/personaplex-7b-v1",
        first_unit_ms=80,
        chunk_period_ms=80,
        input_format="pcm_f32le",
        input_rate_hz=24000,
        # Ours, and the client's default; the upstream sources we have state no output rate.
        output_rate_hz=24000,
        lifecycle="model_turn",
        model_owned_turns=True,
        client_commits=False,
        push_to_talk=False,
        server_vad=False,
        # A named voice prompt (`voice`) instead; a given `ref_audio` is still sent.
        reference_voice=False,
        # Upstream ignores `video_frames` for this family; our server does not refuse them.
        required_modalities=("audio",),
        optional_modalities=(),
        barge_in=False,
        session_resume=False,
        audio_truncate=False,
        tools=False,
        reference_profile=True,
    ),
    ModelFamily(
        name="nemotron",
        title="Nemotron VoiceChat",
        default_model=None,
        # 1280-sample frames of 16 kHz float32 in, one 80 ms PCM16 packet at 22.05 kHz out per
        # frame (vLLM-Omni 0.30.0 `clients/nemotron_voicechat.py`,
        # `model_executor/models/nemotron_voicechat/duplex/input.py`).
        first_unit_ms=80,
        chunk_period_ms=80,
        input_format="pcm_f32le",
        input_rate_hz=16000,
        output_rate_hz=22050,
        # One continuous response, drained at `session.close` after trailing silence, ending
        # `stream_drained` (Sy0307/vllm-omni `tests/e2e/online_serving/
        # nemotron_voicechat_realtime_duplex.py`; 0.30.0 states no lifecycle, protocol.md §9.2).
        lifecycle="continuous_stream",
        model_owned_turns=True,
        # Upstream advertises `supports_client_commit: true`; a continuous stream ends at
        # `session.close` instead, so clients send no commits (`client.takes_commits`).
        client_commits=False,
        push_to_talk=False,
        server_vad=False,
        reference_voice=False,
        required_modalities=("audio",),
        optional_modalities=(),
        barge_in=False,
        session_resume=True,
        audio_truncate=False,
        # Upstream advertises tools by model, not by a capability flag; the flag is ours.
        tools=True,
        reference_profile=True,
        # Both upstream Nemotron e2e clients read `response.audio.delta` (beta names); 0.30.0's
        # typed events render GA names only (protocol.md §A.7).
        event_names="beta",
    ),
    ModelFamily(
        name="qwen3-turn",
        title="Qwen3-Omni (turn-based)",
        default_model="Qwen/Qwen3-Omni-30B-A3B-Instruct",
        # vLLM-Omni 0.30.0 `model_executor/models/qwen3_omni/duplex/plugin.py`: a turn model
        # (`turn_based_duplex`), each committed utterance one request; its capabilities keep
        # the default grid and modalities; appends are normalised to 16 kHz float before its
        # buffer (PCM16 at any rate is resampled; float input only at 16 kHz).
        first_unit_ms=DEFAULT_FIRST_UNIT_MS,
        chunk_period_ms=DEFAULT_CHUNK_PERIOD_MS,
        input_format="pcm16",
        input_rate_hz=16000,
        output_rate_hz=24000,
        lifecycle="model_turn",
        model_owned_turns=False,
        # Its plugin refuses `auto_response`: turns end with a commit and `response.create`.
        client_commits=True,
        push_to_talk=True,
        server_vad=True,
        # It refuses `ref_audio` ("Qwen duplex does not support reference voice audio").
        reference_voice=False,
        required_modalities=("audio",),
        # Frames are sampled as for video, then sent as `input_image` items (`image_items`).
        optional_modalities=("video",),
        barge_in=True,
        session_resume=True,
        audio_truncate=True,
        # It refuses `realtime_tools` ("Qwen duplex tool calls are not implemented").
        tools=False,
        reference_profile=True,
        image_items=True,
    ),
)

#: The family a session uses when none is named (`--preset`, `serve --profile`).
DEFAULT_FAMILY: Final = "minicpmo"
#: The `--preset` value for a bare `SessionConfig` (no family).
NO_PRESET: Final = "none"
#: Family names in table order.
FAMILY_NAMES: Final[tuple[str, ...]] = tuple(f.name for f in FAMILIES)
#: `--preset` choices of `stream` and `eval`: every family, then `none`.
PRESET_CHOICES: Final[tuple[str, ...]] = (*FAMILY_NAMES, NO_PRESET)
#: `--preset` choices of `live`: `auto` (from `--turn`) first.
LIVE_PRESET_CHOICES: Final[tuple[str, ...]] = ("auto", *PRESET_CHOICES)
#: Who ends a user turn: the model, the server's VAD, or the client on a key release.
TURN_STYLES: Final[tuple[str, ...]] = ("model", "vad", "ptt")
#: Families whose sessions take no commits (model-owned turns without them, or a stream).
COMMIT_FREE: Final[frozenset[str]] = frozenset(f.name for f in FAMILIES if not f.client_commits)
#: Families `duplex-cli serve` has a profile for, in table order.
PROFILE_FAMILIES: Final[tuple[str, ...]] = tuple(f.name for f in FAMILIES if f.reference_profile)

_BY_NAME: Final[dict[str, ModelFamily]] = {f.name: f for f in FAMILIES}


class UnknownFamilyError(ValueError):
    """A name that is no family; the message lists the choices."""


def family(name: str) -> ModelFamily:
    """The family called `name` (`UnknownFamilyError`, a `ValueError`, names the choices)."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise UnknownFamilyError(
            f"unknown model family {name!r}; choose from {', '.join(FAMILY_NAMES)}"
        ) from None


def preset_family(preset: str) -> ModelFamily | None:
    """The family a preset names; None for `none` (an unknown name: `UnknownFamilyError`)."""
    return None if preset == NO_PRESET else family(preset)


def default_model(preset: str) -> str | None:
    """The model a preset names: its family's default; None (the server's own) for `none`.

    A name that is no family names no model either, as `presets.preset_model` always did:
    choosing the model never rejects a preset, validation does.
    """
    f = _BY_NAME.get(preset)
    return None if f is None else f.default_model


def _default_family_model() -> str:
    """The default family's model; the table must give it one (the fallback of last resort)."""
    model = family(DEFAULT_FAMILY).default_model
    if model is None:
        raise RuntimeError(f"the default family {DEFAULT_FAMILY!r} names no default model")
    return model


#: The model asked for when nothing else says which (`--model`, a listing, a preset).
DEFAULT_MODEL: Final[str] = _default_family_model()


def auto_preset(turn: str) -> str:
    """`--preset auto`: the default family for model turns, else the first with speech turns."""
    _check_turn(turn)
    if turn == "model":
        return DEFAULT_FAMILY
    return next(f.name for f in FAMILIES if not f.model_owned_turns and f.push_to_talk)


def own_turn(preset: str, *, manual_commit: bool = False) -> str:
    """The turn style a preset runs with when none is asked for (a file run's).

    Model-owned turns: `model`. Speech turns: the server's VAD where the family has one, and
    commits from the client (`ptt`) with `manual_commit`, without a VAD, or for a family
    whose camera frames go as image items (Qwen3-Omni: commit + `response.create` turns).
    """
    if preset == NO_PRESET:
        return "model"
    f = family(preset)
    if f.model_owned_turns:
        return "model"
    return "vad" if f.server_vad and not manual_commit and not f.image_items else "ptt"


def embedded_profile(preset: str) -> str:
    """The reference-server profile for a preset: the family's own, else the default family's."""
    if preset != NO_PRESET and family(preset).reference_profile:
        return preset
    return DEFAULT_FAMILY


def _check_turn(turn: str) -> None:
    """Raise `ValueError` unless `turn` is one of `TURN_STYLES`."""
    if turn not in TURN_STYLES:
        raise ValueError(f"turn must be one of {', '.join(TURN_STYLES)}, got {turn!r}")


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def _khz(rate_hz: int) -> str:
    return f"{rate_hz / 1000:g} kHz"


#: The README table's columns: heading and how a family fills it.
_COLUMNS: Final[tuple[tuple[str, Callable[[ModelFamily], str]], ...]] = (
    ("`--preset`", lambda f: f"`{f.name}`"),
    ("family", lambda f: f.title),
    ("default model", lambda f: f"`{f.default_model}`" if f.default_model else "none"),
    ("units (ms): first / next", lambda f: f"{f.first_unit_ms} / {f.chunk_period_ms}"),
    ("input", lambda f: f"{_khz(f.input_rate_hz)} `{f.input_format}`"),
    ("output", lambda f: _khz(f.output_rate_hz)),
    ("lifecycle", lambda f: f"`{f.lifecycle}`"),
    ("commits", lambda f: _yes(f.client_commits)),
    ("push-to-talk", lambda f: _yes(f.push_to_talk)),
    ("server VAD", lambda f: _yes(f.server_vad)),
    ("reference voice", lambda f: _yes(f.reference_voice)),
)


def markdown_table() -> str:
    """The families as the README's Markdown table (a test keeps the README equal to it)."""
    rows = [
        "| " + " | ".join(head for head, _ in _COLUMNS) + " |",
        "|" + "---|" * len(_COLUMNS),
        *("| " + " | ".join(cell(f) for _, cell in _COLUMNS) + " |" for f in FAMILIES),
    ]
    return "\n".join(rows)
