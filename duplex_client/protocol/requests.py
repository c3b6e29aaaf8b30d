"""Typed nested objects of client events: the requested session, its knobs, response options.

What a server accepts (protocol.md §2.1, §2.4, §4.3), checked by `Record.decode`; what depends
on the session (a change after the first append, the profile's VAD, agreeing rates) is the
server's own check.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Final

from duplex_client.protocol.codec import CodecError, b64decode
from duplex_client.protocol.errors import ErrorCode
from duplex_client.protocol.schema import OMIT, Record, Rule
from duplex_client.protocol.tool_items import check_tool_choice, check_tools

#: Input encodings (aliases → canonical) and their bytes per sample (§2.1). `pcm` is PCM16
#: (vLLM-Omni's spelling); G.711 µ-law and A-law carry 8 bits a sample.
INPUT_FORMATS: Final = (
    {"pcm16": "pcm16", "pcm_s16le": "pcm16", "s16le": "pcm16", "pcm": "pcm16", "audio/pcm": "pcm16"}
    | {"pcm_f32le": "pcm_f32le", "f32le": "pcm_f32le"}
    | dict.fromkeys(("g711_ulaw", "g711-ulaw", "ulaw", "mulaw"), "g711_ulaw")
    | dict.fromkeys(("g711_alaw", "g711-alaw", "alaw"), "g711_alaw")
)
#: Format-object `type`s (`{"type": …, "rate": N}`) → canonical encoding.
FORMAT_OBJECT_TYPES: Final = {"audio/pcm": "pcm16", "pcm16": "pcm16"} | {
    "audio/pcm_f32le": "pcm_f32le",
    "audio/g711_ulaw": "g711_ulaw",
    "audio/g711_alaw": "g711_alaw",
}
#: Companded encodings: decoded to PCM16 on arrival; 8000 Hz unless a rate is declared.
G711_FORMATS: Final = ("g711_ulaw", "g711_alaw")
G711_DEFAULT_RATE: Final = 8000
BYTES_PER_SAMPLE: Final = {"pcm16": 2, "pcm_f32le": 4, "g711_ulaw": 1, "g711_alaw": 1}
INPUT_RATES: Final = (8000, 16000, 22050, 24000, 32000, 44100, 48000)
#: 22050: Nemotron VoiceChat's output (vLLM-Omni 0.30.0 `clients/nemotron_voicechat.py`).
OUTPUT_RATES: Final = (16000, 22050, 24000, 48000)
OVERLAP_POLICIES: Final = ("listen_only", "barge_in_on_speech")
PLAYBACK_POLICIES: Final = ("ack_only", "commit_all_on_done")
WINDOW_MODES: Final = ("off", "basic", "context")
MODALITIES: Final = ("audio", "text")
_PCM_OBJECT_TYPES: Final = ("audio/pcm", "pcm16")
_UNSUPPORTED: Final = ErrorCode.UNSUPPORTED_AUDIO_FORMAT
_TOOLS: Final = ErrorCode.INVALID_TOOLS


def input_format(value: Any) -> tuple[str, int | None]:
    """The canonical encoding (and rate, for the object form) of an accepted input format."""
    if isinstance(value, dict):
        return FORMAT_OBJECT_TYPES[value["type"]], value.get("rate")
    return INPUT_FORMATS[value], None


def _input_format(value: Any) -> str | None:
    if isinstance(value, dict):
        kind, rate = value.get("type"), value.get("rate")
        if kind not in FORMAT_OBJECT_TYPES:
            return f"unsupported format {kind!r}"
        if rate is not None and (rate.__class__ is not int or rate not in INPUT_RATES):
            return f"unsupported sample rate {rate!r}"
        return None
    if isinstance(value, str) and value in INPUT_FORMATS:
        return None
    return f"unsupported format {value!r}"


def _output_format(value: Any) -> str | None:
    if isinstance(value, str) and INPUT_FORMATS.get(value) == "pcm16":
        return None
    if isinstance(value, dict) and value.get("type") in _PCM_OBJECT_TYPES:
        return None
    return "output is pcm16 only"


def _response_format(value: str) -> str | None:
    if value == "pcm" or INPUT_FORMATS.get(value) == "pcm16":
        return None
    return "response_format must be pcm: this server outputs PCM16 only"


def _tracing(value: Any) -> str | None:
    return None if isinstance(value, str | dict) else "tracing must be a string or an object"


def _token_cap(value: Any) -> str | None:
    if value == "inf" or (value.__class__ is int and value > 0):
        return None
    return "the token cap must be a positive integer or 'inf'"


def _data_url(value: Any) -> str | None:
    if not isinstance(value, str) or not value.startswith("data:") or ";base64," not in value[:256]:
        return "ref_audio must be a data:audio/...;base64 URL, not a path or URL"
    try:
        b64decode(value.split(",", 1)[1])
    except CodecError:
        return "ref_audio is not valid base64"
    return None


_FORMAT = Rule(check=_input_format, code=_UNSUPPORTED)
_INPUT_RATE = Rule(choices=INPUT_RATES, code=_UNSUPPORTED)
_TURN_DETECTION = Rule(code=ErrorCode.UNSUPPORTED_TURN_DETECTION, param="turn_detection")


#: Silero's lowest usable speech threshold (vLLM-Omni 0.30.0 `engine/duplex/vad.py`).
SILERO_VAD_MIN_THRESHOLD: Final = 0.15


@dataclass(kw_only=True, slots=True)
class TurnDetection(Record):
    """`turn_detection`: `server_vad` as vLLM-Omni 0.30.0 checks it (`turn_detection.py`).

    Unknown keys are refused (a misspelled knob would silently do nothing), the threshold is
    above Silero's minimum and at most 1, the durations are non-negative, and
    `interrupt_response: false` is refused (`turn_detection: null` is the model-owned lane).
    """

    CODE = ErrorCode.UNSUPPORTED_TURN_DETECTION
    EXTRA_CODE = ErrorCode.UNSUPPORTED_TURN_DETECTION
    NULL_IS_ABSENT = False

    type: Annotated[str, Rule(choices=("server_vad",))]
    interrupt_response: Annotated[bool, Rule(choices=(True,))] = True
    create_response: Annotated[bool | None, OMIT] = None
    #: The server VAD's speech probability threshold and the silence that ends a turn.
    threshold: Annotated[float | None, Rule(omit=True, gt=SILERO_VAD_MIN_THRESHOLD, le=1)] = None
    prefix_padding_ms: Annotated[float | None, Rule(omit=True, ge=0)] = None
    silence_duration_ms: Annotated[float | None, Rule(omit=True, ge=0)] = None
    #: Speech shorter than this is not a turn (upstream's default 96 ms).
    min_speech_duration_ms: Annotated[float | None, Rule(omit=True, ge=0)] = None


@dataclass(kw_only=True, slots=True)
class AudioInputRequest(Record):
    """`session.audio.input` as a client sends it."""

    format: Annotated[Any | None, _FORMAT] = None
    sample_rate_hz: Annotated[int | None, _INPUT_RATE] = None
    turn_detection: Annotated[TurnDetection | None, _TURN_DETECTION] = None
    #: Accepted and echoed, as vLLM-Omni 0.30.0 does (`engine/duplex/config.py` keeps it as
    #: `realtime_input_audio_noise_reduction`); no engine here reduces noise.
    noise_reduction: dict[str, Any] | None = None
    #: Mono only: upstream echoes the key and reads every append as mono, so a stereo
    #: declaration would be misread there; ours refuses it instead.
    channels: Annotated[int | None, Rule(choices=(1,), code=_UNSUPPORTED)] = None


@dataclass(kw_only=True, slots=True)
class AudioOutputRequest(Record):
    """`session.audio.output` as a client sends it."""

    format: Annotated[Any | None, Rule(check=_output_format, code=_UNSUPPORTED)] = None
    sample_rate_hz: Annotated[int | None, Rule(choices=OUTPUT_RATES, code=_UNSUPPORTED)] = None
    speed: Annotated[float | None, Rule(gt=0)] = None
    #: The voice, read where the top-level `voice` is absent (vLLM-Omni 0.30.0 `config.py`).
    voice: str | None = None


@dataclass(kw_only=True, slots=True)
class AudioRequest(Record):
    """`session.audio` as a client sends it."""

    input: AudioInputRequest | None = None
    output: AudioOutputRequest | None = None


@dataclass(kw_only=True, slots=True)
class ExtraBody(Record):
    """`session.extra_body`: the model knobs (§2.4); other keys are echoed without effect."""

    CODE = ErrorCode.INVALID_DUPLEX_RUNTIME_CONFIG
    NULL_IS_ABSENT = False

    auto_response: bool = True
    native_duplex: Annotated[bool, Rule(aliases=("minicpmo45_native_duplex",))] = False
    force_listen_count: Annotated[int, Rule(ge=0)] = 0
    duplex_initial_user_text: str | None = None
    return_stage_metrics: bool = False
    sliding_window_mode: Annotated[str, Rule(choices=WINDOW_MODES)] = "off"
    basic_window_high_tokens: Annotated[int, Rule(gt=0)] = 8000
    basic_window_low_tokens: Annotated[int, Rule(gt=0)] = 6000
    context_max_units: Annotated[int, Rule(gt=0)] = 24
    context_previous_max_tokens: Annotated[int, Rule(gt=0)] = 500
    #: The session's overlap and playback settings, which vLLM-Omni 0.30.0 also takes here
    #: (`engine/duplex/config.py` `from_event` / `apply_realtime_update`; these win over the
    #: session's own fields). Upstream turns an unknown policy into the default; ours refuses it.
    overlap_policy: Annotated[str | None, Rule(choices=OVERLAP_POLICIES, omit=True)] = None
    overlap_short_ack_ms: Annotated[int | None, Rule(ge=0, omit=True)] = None
    overlap_barge_in_ms: Annotated[int | None, Rule(ge=0, omit=True)] = None
    overlap_silence_rms: Annotated[float | None, Rule(ge=0, le=1, omit=True)] = None
    playback_commit_policy: Annotated[str | None, Rule(choices=PLAYBACK_POLICIES, omit=True)] = None


@dataclass(kw_only=True, slots=True)
class SessionRequest(Record):
    """The `session` of `session.update` (§2.1); unknown fields are echoed without effect."""

    model: str | None = None
    modalities: Annotated[list[str] | None, Rule(choices=MODALITIES, non_empty=True)] = None
    audio: AudioRequest | None = None
    input_audio_format: Annotated[Any | None, _FORMAT] = None
    sample_rate_hz: Annotated[
        int | None, Rule(aliases=("sample_rate",), choices=INPUT_RATES, code=_UNSUPPORTED)
    ] = None
    output_audio_format: Annotated[Any | None, Rule(check=_output_format, code=_UNSUPPORTED)] = None
    turn_detection: Annotated[TurnDetection | None, _TURN_DETECTION] = None
    overlap_policy: Annotated[str | None, Rule(choices=OVERLAP_POLICIES)] = None
    overlap_short_ack_ms: Annotated[int | None, Rule(ge=0)] = None
    overlap_barge_in_ms: Annotated[int | None, Rule(ge=0)] = None
    overlap_silence_rms: Annotated[float | None, Rule(ge=0, le=1)] = None
    input_audio_transcription: dict[str, Any] | None = None
    #: The older place of `audio.input.noise_reduction` (an object; echoed without effect).
    input_audio_noise_reduction: dict[str, Any] | None = None
    playback_commit_policy: Annotated[str | None, Rule(choices=PLAYBACK_POLICIES)] = None
    instructions: str | None = None
    #: The user's opening turn, as text (vLLM-Omni 0.30.0 `DuplexSessionConfig`); the older
    #: `extra_body.duplex_initial_user_text` wins when both are sent, as upstream's MiniCPM-o.
    initial_user_text: str | None = None
    voice: str | None = None
    temperature: Annotated[float | None, Rule(ge=0, le=2)] = None
    max_response_output_tokens: Annotated[Any | None, Rule(check=_token_cap)] = None
    #: Upstream's other spellings of the token cap (the first present of the three wins).
    max_output_tokens: Annotated[Any | None, Rule(check=_token_cap)] = None
    max_tokens: Annotated[Any | None, Rule(check=_token_cap)] = None
    output_modalities: Annotated[list[str] | None, Rule(choices=MODALITIES, non_empty=True)] = None
    response_format: Annotated[str | None, Rule(check=_response_format)] = None
    speed: Annotated[float | None, Rule(gt=0)] = None
    tracing: Annotated[Any | None, Rule(check=_tracing)] = None
    idle_timeout_s: Annotated[float | None, Rule(gt=0)] = None
    ref_audio: Annotated[
        Any | None, Rule(check=_data_url, code=ErrorCode.UNSUPPORTED_REF_AUDIO_PATH)
    ] = None
    extra_body: Annotated[dict[str, Any] | None, Rule(schema=ExtraBody)] = None
    tools: Annotated[list[dict[str, Any]] | None, Rule(check=check_tools, code=_TOOLS)] = None
    tool_choice: Annotated[Any | None, Rule(check=check_tool_choice, code=_TOOLS)] = None


@dataclass(kw_only=True, slots=True)
class ResponseOptions(Record):
    """`response.create.response`: per-response options (§4.3); other keys are refused."""

    EXTRA_CODE = ErrorCode.UNSUPPORTED_NATIVE_RESPONSE_OPTIONS

    modalities: Annotated[
        list[str] | None,
        Rule(aliases=("output_modalities",), choices=MODALITIES, non_empty=True),
    ] = None
    metadata: dict[str, Any] | None = None
    max_output_tokens: Annotated[Any | None, Rule(check=_token_cap)] = None
    instructions: Any | None = None
    temperature: Any | None = None
    #: The response's output format (upstream's `response_format` too): PCM16 only here.
    output_audio_format: Annotated[
        Any | None, Rule(aliases=("response_format",), check=_output_format, code=_UNSUPPORTED)
    ] = None


@dataclass(kw_only=True, slots=True)
class AppendVad(Record):
    """An append's `vad`: the client VAD's verdict (`probability` is read as a synonym)."""

    is_speech: Annotated[bool | None, OMIT] = None
    speech_probability: Annotated[
        float | None, Rule(aliases=("probability",), omit=True, ge=0, le=1)
    ] = None
    silence_rms: Annotated[float | None, Rule(omit=True, ge=0, le=1)] = None


#: Every nested object class a client sends (the round-trip test covers each).
REQUEST_CLASSES: tuple[type[Record], ...] = (
    TurnDetection,
    AudioInputRequest,
    AudioOutputRequest,
    AudioRequest,
    ExtraBody,
    SessionRequest,
    ResponseOptions,
    AppendVad,
)
