"""More of `RunOptions.validate`: options that would reach the server wrong, or do nothing.

Each check refuses (`UsageError`, one line naming the keywords) what the client can tell is
wrong before anything is opened: a sliding-window knob without its mode (it is never sent)
or out of range, a temperature outside the protocol's 0..2, function tools for a model family
that calls none, a reference voice its preset never sends, session options next to a `config`
that is sent as is, video options without a video, image options without an image to send,
reconnect attempts without reconnecting, and the embedded server's options with a URL.
`frames_note` explains, once the unit grid is known, a `video_fps` above the frames a unit
carries.
"""

from __future__ import annotations

import math
import numbers
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from duplex_client.families import FAMILIES, preset_family
from duplex_client.usage import UsageError

if TYPE_CHECKING:
    from duplex_client.run.options import InputKind, RunOptions

#: The sliding-window knobs by the mode that reads them (protocol.md §2.4).
WINDOW_KNOBS: Final[dict[str, str]] = {
    "basic_window_high_tokens": "basic",
    "basic_window_low_tokens": "basic",
    "context_max_units": "context",
    "context_previous_max_tokens": "context",
}
#: The largest knob the client sends (tokens or units).
MAX_WINDOW_KNOB: Final = 10_000_000
#: The protocol's temperature range (protocol.md §2.1).
MAX_TEMPERATURE: Final = 2.0
#: Options that shape the session config, unused when a `config` is sent as is.
_SESSION_OPTIONS: Final = ("instructions", "temperature", "sliding_window", "manual_commit")
#: Options of a video input, at the values a run without a video has.
VIDEO_OPTIONS: Final[dict[str, Any]] = {"video_fps": 1.0, "stack_frames": 1, "soundtrack": "trim"}
#: Frame settings of a file run when the options leave them to the input.
FILE_FRAME_MAX_SIDE: Final = 0
FILE_JPEG_QUALITY: Final = 90
#: Options of the images sent (a video's frames, a still image): the values that change nothing.
IMAGE_OPTIONS: Final[dict[str, tuple[Any, ...]]] = {
    "frame_max_side": (None, FILE_FRAME_MAX_SIDE),
    "jpeg_quality": (None, FILE_JPEG_QUALITY),
}
#: Reconnect attempts when none are given.
DEFAULT_RECONNECT_ATTEMPTS: Final = 5


def check_more(options: RunOptions, inputs: InputKind) -> None:
    """The checks below, in order (`RunOptions.validate` runs them last)."""
    check_temperature(options.temperature)
    check_window(options)
    check_family(options)
    check_config(options)
    check_reconnect(options)
    check_plan_cache(options)
    if inputs == "files":
        check_video(options)
        check_images(options)
    elif inputs in ("devices", "browser"):
        check_live_turns(options)


def check_plan_cache(options: RunOptions) -> None:
    """A cache directory with the cache off, a file where it should be, a bad variable."""
    from duplex_client.media.plan_cache import ENV_DIR, max_bytes_from_env

    try:
        on = options.plan_cache_on()
        max_bytes_from_env()
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if options.plan_cache_dir is not None and not on:
        why = "turned off" if options.plan_cache is False else "off (DUPLEX_PLAN_CACHE)"
        raise UsageError(
            f"plan_cache_dir is unused: the plan cache is {why}", param="plan_cache_dir"
        )
    where = os.path.expanduser(options.plan_cache_dir or os.environ.get(ENV_DIR, "").strip())
    if on and where and os.path.exists(where) and not os.path.isdir(where):
        param = "plan_cache_dir" if options.plan_cache_dir else None
        label = "plan_cache_dir" if param else ENV_DIR
        raise UsageError(f"{label} {where} is not a directory", param=param)


def check_live_turns(options: RunOptions) -> None:
    """A live model-turn session with a turn-based model: nothing would ever ask for an answer.

    A file run commits its input at the end; a live one commits only on the server's or the
    client's voice activity (`turn vad`) or a released talk key (`turn ptt`).
    """
    family = preset_family(options.preset_name())
    if options.config is not None or family is None or family.model_owned_turns:
        return
    if options.turn == "model":
        raise UsageError(
            f"turn model: the {options.preset} preset's model ({family.title}) takes turns, it "
            "does not decide them, so a live session would never get an answer (choose the "
            "turn mode vad or ptt)",
            param="turn",
        )


def check_temperature(value: Any) -> None:
    """A finite number in the protocol's 0..2 (None: the server's default)."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise UsageError(f"temperature must be a finite number, got {value!r}", param="temperature")
    value = float(value)
    if value < 0:
        raise UsageError(f"temperature must be >= 0, got {value:g}", param="temperature")
    if value > MAX_TEMPERATURE:
        raise UsageError(
            f"temperature must be at most {MAX_TEMPERATURE:g} (the protocol's range), got "
            f"{value:g}",
            param="temperature",
        )


def check_window(options: RunOptions) -> None:
    """Each knob a positive integer, known, and sent: only with its own sliding-window mode."""
    knobs = options.window_knobs
    if not isinstance(knobs, Mapping):
        raise UsageError(
            f"window_knobs must be a mapping of knob to integer, got {knobs!r}",
            param="window_knobs",
        )
    for name, value in knobs.items():
        mode = WINDOW_KNOBS.get(name)
        if mode is None:
            raise UsageError(
                f"window_knobs: unknown knob {name!r} (known: {', '.join(WINDOW_KNOBS)})",
                param="window_knobs",
            )
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
            raise UsageError(f"{name} must be a positive integer, got {value!r}", param=name)
        if value > MAX_WINDOW_KNOB:
            raise UsageError(f"{name} must be at most {MAX_WINDOW_KNOB}, got {value}", param=name)
        if options.sliding_window != mode and options.config is None:
            given = options.sliding_window or "not given"
            raise UsageError(
                f"{name} is a knob of sliding_window {mode} ({given} here): without that mode "
                "it is never sent",
                param=name,
                keywords=(name, "sliding_window"),
            )
    high, low = knobs.get("basic_window_high_tokens"), knobs.get("basic_window_low_tokens")
    if high is not None and low is not None and low >= high:
        raise UsageError(
            f"basic_window_low_tokens ({low}) must be below basic_window_high_tokens ({high})",
            param="basic_window_low_tokens",
            keywords=("basic_window_low_tokens", "basic_window_high_tokens"),
        )


def check_family(options: RunOptions) -> None:
    """Tools for a family that calls functions; a reference voice where the preset sends it."""
    if options.config is not None:
        return
    preset = options.preset_name()
    family = preset_family(preset)
    if family is None:  # `none`: a bare config, whatever the server makes of it
        return
    if options.tools is not None and not family.tools:
        callers = ", ".join(f.name for f in FAMILIES if f.tools)
        raise UsageError(
            f"tools: the {preset} preset's model ({family.title}) calls no functions; use a "
            f"preset whose model does ({callers}), or the preset none",
            param="tools",
            keywords=("tools",),
        )
    if options.ref_audio is not None and not family.model_owned_turns:
        chosen = f" (chosen for turn {options.turn})" if options.preset == "auto" else ""
        takers = ", ".join(f.name for f in FAMILIES if f.model_owned_turns)  # `presets`
        raise UsageError(
            f"ref_audio: the {preset} preset{chosen} sends no reference voice (speech turns: "
            f"its server answers in its own voice); presets that send one: {takers}",
            param="ref_audio",
        )


def check_config(options: RunOptions) -> None:
    """Session options next to a `config`, which is sent as is, would do nothing."""
    if options.config is None:
        return
    for name in _SESSION_OPTIONS:
        if getattr(options, name) not in (None, False):
            raise UsageError(
                f"{name} is unused with config (the config is sent as is): set it in the config",
                param=name,
            )
    if options.window_knobs:
        raise UsageError(
            "window_knobs are unused with config (the config is sent as is)", param="window_knobs"
        )


def check_video(options: RunOptions, *, video: str = "input_video") -> None:
    """The video options of a run without a video (`video`: what would have been one)."""
    if options.input_video:
        return
    for name, default in VIDEO_OPTIONS.items():
        if getattr(options, name) != default:
            raise UsageError(
                f"{name} applies to {video}, and there is none: it would not be used",
                param=name,
                keywords=(name, "input_video") if video == "input_video" else (name,),
            )


def check_images(options: RunOptions, *, images: str = "input_video or input_image") -> None:
    """The image options of a run that sends no image (`images`: what would have sent one)."""
    if options.input_video or options.input_image:
        return
    for name, idle in IMAGE_OPTIONS.items():
        if getattr(options, name) not in idle:
            named = ("input_video", "input_image") if images.startswith("input_") else ()
            raise UsageError(
                f"{name} applies to the images sent ({images}), and there are none: it would "
                "not be used",
                param=name,
                keywords=(name, *named),
            )


def check_reconnect(options: RunOptions) -> None:
    """Reconnect attempts are unused when reconnecting is off."""
    if not options.reconnect and options.reconnect_attempts != DEFAULT_RECONNECT_ATTEMPTS:
        raise UsageError(
            "reconnect_attempts is unused: reconnecting is off, so a dropped connection ends "
            "the run",
            param="reconnect_attempts",
            keywords=("reconnect_attempts",),
        )


def check_url_options(options: RunOptions) -> None:
    """With a URL, the embedded server's options would do nothing."""
    embedded = {"require_audio": options.require_audio, "server_script": options.server_script}
    for name, value in embedded.items():
        if value:
            raise UsageError(
                f"{name} configures the embedded reference server, and url names another "
                "server: leave it out",
                param=name,
                keywords=(name, "url"),
            )


def frames_note(video_fps: float, stack_frames: int, period_ms: int) -> str | None:
    """Why `video_fps` is more than is sent: a unit carries `stack_frames` frames at most."""
    per_second = stack_frames * 1000 / period_ms
    if video_fps <= per_second + 1e-9:
        return None
    carried = "the frame shown at its start" + (
        f" and a composite of {stack_frames - 1} more" if stack_frames > 1 else ""
    )
    return (
        f"video_fps {video_fps:g} asks for more frames than are sent: each {period_ms} ms unit "
        f"carries {carried} ({per_second:g} a second); raise stack_frames to send more"
    )
