"""Options of a file run (`duplex-cli stream`, `stream_clip`): validation, presets, media.

Exit codes: 0 ok, 1 the session failed, 2 bad options or input (nothing sent), 130
interrupted (143 terminated, 129 hangup). Errors name the keyword arguments
(`chunk_ms must be positive, got 0`); `UsageError.render` gives the CLI's flags instead.
"""

from __future__ import annotations

import math
import numbers
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from duplex_client.analysis.annotations import (
    AnnotationError,
    SpeechSegment,
    check_range,
    load_annotations,
    parse_annotations,
)
from duplex_client.client.config import SessionConfig, ref_audio_data_url
from duplex_client.client.resume import ReconnectPolicy
from duplex_client.framing.sources import AudioVisualSource, MediaInput
from duplex_client.protocol.capabilities import DEFAULT_CHUNK_PERIOD_MS, DEFAULT_FIRST_UNIT_MS
from duplex_client.protocol.errors import DuplexClientError
from duplex_client.usage import UsageError

__all__ = [
    "MAX_CHUNK_MS",
    "MAX_SECONDS",
    "PRESET_NAMES",
    "SOUNDTRACK_POLICIES",
    "WINDOW_MODES",
    "RunFailed",
    "RunOptions",
    "UsageError",
    "default_run_dir",
    "open_source",
]

PRESET_NAMES = ("minicpmo", "joyai", "aura", "personaplex", "nemotron", "none")
SOUNDTRACK_POLICIES = ("trim", "pad", "full")
WINDOW_MODES = ("off", "basic", "context")
#: The longest append by default; a grid with shorter units cuts it to one unit, unnoted.
DEFAULT_CHUNK_MS = 200
#: The longest append the framer makes: appends never cross a unit boundary, so a longer
#: `chunk_ms` would be cut to one unit (the default grid's units are 1000 ms).
MAX_CHUNK_MS = max(DEFAULT_FIRST_UNIT_MS, DEFAULT_CHUNK_PERIOD_MS)
#: The bound of every duration option (tail silence, timeouts, settle time), in seconds.
MAX_SECONDS = 3600.0
#: Bounds of the other numeric options: (low, high), both included.
_LIMITS: dict[str, tuple[float, float]] = {
    "video_fps": (0.0, 120.0),  # the low bound is excluded (see `_OPEN_LOW`)
    "frame_max_side": (0, 8192),
    "stack_frames": (1, 16),
    "jpeg_quality": (1, 100),
    "chunk_ms": (1, MAX_CHUNK_MS),
    "reconnect_attempts": (1, 100),
    "tail_silence_s": (0.0, MAX_SECONDS),
    "timeout_s": (0.0, MAX_SECONDS),
    "settle_s": (0.0, MAX_SECONDS),
    "handshake_timeout_s": (0.0, MAX_SECONDS),
}
_INTEGERS = frozenset({"frame_max_side", "stack_frames", "jpeg_quality", "chunk_ms"})
_INTEGERS |= {"reconnect_attempts"}
#: Options that must be above their low bound, not equal to it ("must be positive").
_OPEN_LOW = frozenset({"video_fps", "timeout_s", "handshake_timeout_s"})
#: Integer options whose low bound 1 reads "must be positive".
_POSITIVE = frozenset({"chunk_ms"})
#: Why a bound is what it is, for the message.
_WHY = {
    "chunk_ms": " (the longest append the framer makes: one unit)",
}
_UNITS = {"tail_silence_s": " s", "timeout_s": " s", "settle_s": " s"}
_UNITS |= {"handshake_timeout_s": " s", "chunk_ms": " ms"}


class RunFailed(DuplexClientError):
    """The session ran but did not end as it should (no decision, an unfinished response)."""


def check_number(name: str, value: Any) -> None:
    """Raise `UsageError` (one line, naming `name`) unless `value` is within its bounds."""
    low, high = _LIMITS[name]
    unit = _UNITS.get(name, "")
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        what = "an integer" if name in _INTEGERS else "a number"
        raise UsageError(f"{name} must be {what}, got {value!r}", param=name)
    if isinstance(value, numbers.Integral):
        number: int | float = int(value)
        shown = str(number)
        if len(shown) > 16:  # a huge integer: its order of magnitude is enough
            digits = shown.lstrip("-")
            shown = f"{shown[: len(shown) - len(digits)]}{digits[0]}e+{len(digits) - 1}"
    elif name in _INTEGERS:
        raise UsageError(f"{name} must be an integer, got {value!r}", param=name)
    else:
        number = float(value)
        shown = f"{number:g}"
        if not math.isfinite(number):
            raise UsageError(f"{name} must be a finite number, got {shown}", param=name)
    if name in _OPEN_LOW and number <= low:
        raise UsageError(f"{name} must be positive, got {shown}", param=name)
    if number < low:
        rule = "positive" if name in _POSITIVE else f">= {low:g}"
        raise UsageError(f"{name} must be {rule}, got {shown}", param=name)
    if number > high:
        raise UsageError(
            f"{name} must be at most {high:g}{unit}{_WHY.get(name, '')}, got {shown}",
            param=name,
        )


@dataclass(frozen=True, slots=True)
class RunOptions:
    """Everything `duplex-cli stream` can be told; the notebook API takes the same names."""

    input_video: str | None = None
    input_audio: str | None = None
    input_image: str | None = None
    #: The model to ask for; None: the preset's (`presets.PRESET_MODELS`), which may be none.
    model: str | None = None
    preset: str = "minicpmo"
    config: SessionConfig | None = None
    api_key: str | None = field(default=None, repr=False)
    ref_audio: str | None = field(default=None, repr=False)
    video_fps: float = 1.0
    frame_max_side: int = 0
    stack_frames: int = 1
    jpeg_quality: int = 90
    chunk_ms: int = DEFAULT_CHUNK_MS
    tail_silence_s: float = 0.0
    soundtrack: str = "trim"
    realtime: bool = True
    manual_commit: bool = False
    instructions: str | None = None
    temperature: float | None = None
    sliding_window: str | None = None
    window_knobs: dict[str, int] = field(default_factory=dict)
    output_dir: Path | None = None
    timeout_s: float = 30.0
    require_audio: bool = False
    settle_s: float = 0.5
    reconnect: bool = True
    reconnect_attempts: int = 5
    #: Keep the sent payloads (`input.pcm`, `sent_frames/`) in the bundle, for `replay`.
    keep_payloads: bool = False
    #: Write a small JPEG thumbnail of every sent image (`frames/<unit>_<k>.jpg`).
    thumbnails: bool = True
    #: Bounds the whole connection: TCP connect, TLS, WebSocket upgrade and session.created.
    handshake_timeout_s: float = 30.0
    #: User speech on the media clock: a JSON file (ours or a Full-Duplex-Bench shape), or
    #: segments given inline (`{"start_ms", "end_ms"}` mappings or `SpeechSegment`s).
    annotations: str | os.PathLike[str] | Sequence[Mapping[str, Any] | SpeechSegment] | None = None
    #: Function tools to declare: a JSON file (a list, or `{"tools", "tool_choice"}`) or a list.
    tools: str | os.PathLike[str] | Sequence[Mapping[str, Any]] | None = None
    #: Fixed answers per function: `"NAME=JSON"` strings or a name → value mapping.
    tool_results: Mapping[str, Any] | Sequence[str] | None = None

    @property
    def model_name(self) -> str | None:
        """The model sent: `model`, else the preset's (None: the server's own)."""
        from duplex_client.presets import preset_model

        return self.model if self.model is not None else preset_model(self.preset)

    def user_speech(self, media_ms: int) -> list[SpeechSegment] | None:
        """The annotated user speech, checked against the media length (None: not given)."""
        if self.annotations is None:
            return None
        if not self.realtime:
            raise UsageError(
                "annotations needs real-time pacing: without it there is no listener clock "
                "to measure latency on",
                param="annotations",
            )
        try:
            if isinstance(self.annotations, str | os.PathLike):
                segments = load_annotations(os.fspath(self.annotations))
            else:
                rows = [
                    {"start_ms": a.start_ms, "end_ms": a.end_ms}
                    if isinstance(a, SpeechSegment)
                    else a
                    for a in self.annotations
                ]
                segments = parse_annotations(rows, source="annotations")
            check_range(segments, media_ms)
        except AnnotationError as exc:
            raise UsageError(f"annotations: {exc}", param="annotations") from None
        return segments

    def validate(self, *, media: bool = True) -> None:
        """Raise `UsageError` with a one-line message for any invalid combination.

        `media=False` checks everything but the input files (an eval's items or a replay
        bring their own).
        """
        if media and not (self.input_video or self.input_audio or self.input_image):
            raise UsageError(
                "nothing to stream: give input_video, input_audio or input_image",
                keywords=("input_video", "input_audio", "input_image"),
            )
        if self.input_video and self.input_image:
            raise UsageError(
                "input_video and input_image are exclusive",
                param="input_image",
                keywords=("input_video", "input_image"),
            )
        for name in _LIMITS:
            check_number(name, getattr(self, name))
        if self.temperature is not None:
            t = self.temperature
            if isinstance(t, bool) or not isinstance(t, numbers.Real) or not math.isfinite(t):
                raise UsageError(
                    f"temperature must be a finite number, got {t!r}", param="temperature"
                )
            if t < 0:
                raise UsageError(f"temperature must be >= 0, got {t:g}", param="temperature")
        choices = [
            ("preset", self.preset in PRESET_NAMES, ", ".join(PRESET_NAMES)),
            ("soundtrack", self.soundtrack in SOUNDTRACK_POLICIES, "trim, pad or full"),
            ("sliding_window", self.sliding_window in (None, *WINDOW_MODES), "off, basic, context"),
        ]
        for name, ok, allowed in choices:
            if not ok:
                raise UsageError(
                    f"{name} must be one of {allowed}, got {getattr(self, name)!r}", param=name
                )
        self.fixed_tool_results()  # loads and checks the tools file too
        if media and self.input_image and not self.input_audio and self.tail_silence_s <= 0:
            raise UsageError(
                "an image alone has no length: add input_audio or tail_silence_s",
                param="input_image",
                keywords=("input_audio", "tail_silence_s"),
            )

    def declared_tools(self) -> tuple[tuple[dict[str, Any], ...], Any]:
        """The `tools` and `tool_choice` to declare (`UsageError` for a bad tools file)."""
        from duplex_client.run.tools import load_tools

        return ((), None) if self.tools is None else load_tools(self.tools)

    def fixed_tool_results(self) -> dict[str, str]:
        """The output per function from `tool_results` (`UsageError` names a bad one)."""
        from duplex_client.run.tools import parse_tool_results

        if self.tool_results is None:
            return {}
        tools, _ = self.declared_tools()
        names = [str(t.get("name")) for t in tools]
        return parse_tool_results(self.tool_results, names)

    def ref_audio_url(self) -> str | None:
        """`ref_audio` as a data URL, decoded first: not a WAV with samples is a `UsageError`.

        The message names the file, never its content (a reference voice is a secret).
        """
        if self.ref_audio is None:
            return None
        try:
            return ref_audio_data_url(self.ref_audio)
        except ValueError as exc:
            raise UsageError(f"ref_audio: {exc}", param="ref_audio") from None

    def reconnect_policy(self) -> ReconnectPolicy | None:
        """The client's reconnect policy (None with `reconnect=False`)."""
        return ReconnectPolicy(attempts=self.reconnect_attempts) if self.reconnect else None

    def session_config(self) -> SessionConfig:
        """The session config: `config` if given, else the preset plus the options (and tools)."""
        config = self._preset_config()
        tools, choice = self.declared_tools()
        if tools:
            config = config.with_overrides(tools=tools, tool_choice=choice)
        return config

    def _preset_config(self) -> SessionConfig:
        from duplex_client import presets

        if self.config is not None:
            return self.config
        overrides: dict[str, Any] = {}
        extra: dict[str, Any] = {}
        if self.instructions is not None:
            overrides["instructions"] = self.instructions
        if self.temperature is not None:
            overrides["temperature"] = self.temperature
        if self.sliding_window is not None:
            extra["sliding_window_mode"] = self.sliding_window
            extra.update(self.window_knobs)
        if self.manual_commit:
            extra["auto_response"] = False
        if extra:
            overrides["extra_body"] = extra
        ref_audio = self.ref_audio_url()
        if self.preset == "minicpmo":
            return presets.minicpmo_4_5(ref_audio=ref_audio, **overrides)
        if self.preset == "joyai":  # speech turns: no reference voice
            return presets.joyai(manual=self.manual_commit, **overrides)
        base = presets.PLAIN[self.preset]() if self.preset in presets.PLAIN else SessionConfig()
        if ref_audio is not None:
            overrides["ref_audio"] = ref_audio
        return base.with_overrides(**overrides)


def default_run_dir() -> Path:
    """`./runs/<timestamp>` (a suffix keeps two runs in one second apart)."""
    base = Path("runs") / time.strftime("%Y%m%d-%H%M%S")
    path, n = base, 1
    while path.exists():
        n += 1
        path = base.with_name(f"{base.name}-{n}")
    return path


def open_source(options: RunOptions) -> tuple[AudioVisualSource, Any]:
    """Open the media the options name; returns the source and an object to close."""
    from duplex_client.media import ImageFrameSource, open_audio, open_clip

    if options.input_video:
        clip = open_clip(
            options.input_video,
            fps=options.video_fps,
            frame_max_side=options.frame_max_side,
            jpeg_quality=options.jpeg_quality,
            stack_frames=options.stack_frames,
            audio=options.input_audio,
        )
        if clip.media.is_image:  # no length and no soundtrack: it is what input_image is for
            clip.close()
            raise UsageError(
                f"{options.input_video}: a still image: use input_image",
                param="input_video",
                keywords=["input_image"],
            )
        return clip, clip
    audio = open_audio(options.input_audio) if options.input_audio else None
    image = None
    if options.input_image:
        image = ImageFrameSource(
            options.input_image,
            frame_max_side=options.frame_max_side,
            jpeg_quality=options.jpeg_quality,
        )
    return MediaInput(audio=audio, frames=image), None
