"""The run options of a file run (`stream`, and `eval` per item): one definition for both.

`takes_run_flags(exclude=...)` adds these options to a command's signature (typer reads the
signature) and hands the command one `RunOptions` built from them, so `eval` accepts exactly
what `stream` does (`--preset`, `--tail-silence-s`, `--chunk-ms`, ...) without a copy.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Annotated, Any, TypeVar

from duplex_cli.options import (
    ADVANCED,
    DEFAULT_PRESET,
    INPUT,
    OUTPUT,
    SERVER,
    SESSION,
    ApiKeyOpt,
    ChunkMsOpt,
    DialectOpt,
    FrameMaxSideOpt,
    InstructionsOpt,
    JpegQualityOpt,
    ModelOpt,
    OutputDirOpt,
    Preset,
    ReconnectOpt,
    RefAudioOpt,
    RequireAudioOpt,
    SlidingWindow,
    Soundtrack,
    TemperatureOpt,
    _opt,
    choices,
)
from duplex_client.protocol.dialects.detect import AUTO
from duplex_client.run.options import RunOptions

F = TypeVar("F", bound=Callable[..., Any])

#: The options that only combine into one `RunOptions` field (`window_knobs`).
WINDOW_KNOBS = (
    "basic_window_high_tokens",
    "basic_window_low_tokens",
    "context_max_units",
    "context_previous_max_tokens",
)


def _path(panel: str, text: str) -> Any:
    return Annotated[str | None, _opt(panel=panel, metavar="PATH", help=text)]


def _knob(text: str) -> Any:
    return Annotated[int | None, _opt(panel=ADVANCED, metavar="N", help=text)]


def _seconds(panel: str, text: str) -> Any:
    return Annotated[float, _opt(panel=panel, metavar="SECONDS", help=text)]


#: (name, annotation, default), in `--help` order.
_FLAGS: tuple[tuple[str, Any, Any], ...] = (
    ("input_video", _path(INPUT, "Video clip (mp4, mov, mkv, webm...)."), None),
    (
        "input_audio",
        _path(INPUT, "Audio file (wav, flac, mp3, m4a, ogg); replaces a clip's soundtrack."),
        None,
    ),
    ("input_image", _path(INPUT, "Still image sent as every unit's frame."), None),
    ("model", ModelOpt, None),
    ("api_key", ApiKeyOpt, None),
    (
        "preset",
        Annotated[Preset, _opt(panel=SESSION, metavar=choices(Preset), help="Session preset.")],
        DEFAULT_PRESET,
    ),
    ("ref_audio", RefAudioOpt, None),
    (
        "video_fps",
        Annotated[float, _opt(panel=INPUT, metavar="FPS", help="Frames sampled per second.")],
        1.0,
    ),
    ("frame_max_side", FrameMaxSideOpt, 0),
    (
        "stack_frames",
        Annotated[
            int, _opt(panel=INPUT, metavar="N", help="N > 1 adds a composite of N-1 sub-frames.")
        ],
        1,
    ),
    ("jpeg_quality", JpegQualityOpt, 90),
    ("chunk_ms", ChunkMsOpt, 200),
    ("tail_silence_s", _seconds(INPUT, "Seconds of silence after the input."), 0.0),
    (
        "soundtrack",
        Annotated[
            Soundtrack,
            _opt(
                panel=INPUT,
                metavar=choices(Soundtrack),
                help=(
                    "A soundtrack longer or shorter than the video: trim, pad or send it full. "
                    "An --input-audio shorter than the video is padded to it (full: sent as is)."
                ),
            ),
        ],
        Soundtrack.trim,
    ),
    (
        "realtime",
        Annotated[
            bool,
            _opt(
                "--realtime/--burst",
                panel=ADVANCED,
                metavar="",
                help="Pace input on the media clock, or send it as fast as possible.",
            ),
        ],
        True,
    ),
    (
        "no_realtime_pacing",
        Annotated[
            bool, _opt("--no-realtime-pacing", panel=ADVANCED, hidden=True, help="Old --burst.")
        ],
        False,
    ),
    (
        "manual_commit",
        Annotated[
            bool,
            _opt(
                "--manual-commit",
                panel=SESSION,
                metavar="",
                help="auto_response off: commit, then response.create.",
            ),
        ],
        False,
    ),
    ("instructions", InstructionsOpt, None),
    ("temperature", TemperatureOpt, None),
    (
        "sliding_window",
        Annotated[
            SlidingWindow | None,
            _opt(panel=SESSION, metavar=choices(SlidingWindow), help="Sliding window mode."),
        ],
        None,
    ),
    ("basic_window_high_tokens", _knob("basic: trim above this."), None),
    ("basic_window_low_tokens", _knob("basic: trim down to this."), None),
    ("context_max_units", _knob("context: recent units kept."), None),
    ("context_previous_max_tokens", _knob("context: earlier text cap."), None),
    (
        "annotations",
        Annotated[
            Path | None,
            _opt(
                panel=INPUT,
                metavar="PATH",
                help="User-speech segments for latency: a JSON list of {start_ms, end_ms}, or a "
                "Full-Duplex-Bench turn_taking/pause/interrupt/metadata JSON. Default: VAD.",
            ),
        ],
        None,
    ),
    (
        "tools",
        _path(
            SESSION,
            'Function tools to declare: a JSON list, or {"tools": [...], "tool_choice": ...}.',
        ),
        None,
    ),
    (
        "tool_result",
        Annotated[
            list[str] | None,
            _opt(
                panel=SESSION,
                metavar="NAME=JSON",
                help="Answer every call of NAME with this JSON value (repeatable; needs --tools).",
            ),
        ],
        None,
    ),
    ("output_dir", OutputDirOpt, None),
    (
        "keep_payloads",
        Annotated[
            bool,
            _opt(
                "--keep-payloads",
                panel=OUTPUT,
                metavar="",
                help="Keep the sent audio and frames in the bundle (for duplex-cli replay).",
            ),
        ],
        False,
    ),
    (
        "no_thumbnails",
        Annotated[
            bool,
            _opt(
                "--no-thumbnails",
                panel=OUTPUT,
                metavar="",
                help="Leave frame thumbnails out of the bundle "
                "(and so out of `duplex-cli report`).",
            ),
        ],
        False,
    ),
    (
        "plan_cache",
        Annotated[
            bool | None,
            _opt(
                "--plan-cache/--no-plan-cache",
                panel=ADVANCED,
                metavar="",
                help="Reuse a file's decoded audio and frames from the plan cache (default: on, "
                "unless DUPLEX_PLAN_CACHE=off); duplex-cli cache info|clear.",
            ),
        ],
        None,
    ),
    (
        "plan_cache_dir",
        _path(
            ADVANCED,
            "The plan cache's directory (default: DUPLEX_PLAN_CACHE_DIR, else "
            "the user cache directory's duplex-client/plans).",
        ),
        None,
    ),
    ("timeout_s", _seconds(ADVANCED, "Seconds to wait for the answer after the input."), 30.0),
    ("require_audio", RequireAudioOpt, False),
    ("reconnect", ReconnectOpt, True),
    (
        "reconnect_attempts",
        Annotated[
            int,
            _opt(
                panel=ADVANCED,
                metavar="N",
                help="Reconnect attempts after a drop (jittered exponential backoff).",
            ),
        ],
        5,
    ),
    ("handshake_timeout_s", _seconds(SERVER, "Seconds to wait for session.created."), 30.0),
    ("dialect", DialectOpt, AUTO),
)
FLAG_NAMES = tuple(name for name, _, _ in _FLAGS)


def run_options(values: dict[str, Any]) -> RunOptions:
    """The `RunOptions` the flags' values say (flags left out keep `RunOptions`' defaults)."""
    kw = dict(values)
    knobs = {k: kw.pop(k) for k in WINDOW_KNOBS if k in kw}
    burst = kw.pop("no_realtime_pacing", False)
    if kw.pop("no_thumbnails", False):
        kw["thumbnails"] = False
    for name in ("preset", "soundtrack", "sliding_window"):
        if kw.get(name) is not None:
            kw[name] = kw[name].value
    if burst:
        kw["realtime"] = False
    results = kw.pop("tool_result", None)
    if results:
        kw["tool_results"] = tuple(results)
    kw["window_knobs"] = {k: v for k, v in knobs.items() if v is not None}
    return RunOptions(**kw)


def takes_run_flags(*, exclude: Iterable[str] = ()) -> Callable[[F], F]:
    """Add the run flags (but `exclude`) to a command; it receives them as `options`."""
    left_out = set(exclude)
    unknown = left_out - set(FLAG_NAMES)
    if unknown:
        raise ValueError(f"not run flags: {sorted(unknown)}")
    shared = [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=ann, default=default)
        for name, ann, default in _FLAGS
        if name not in left_out
    ]

    def decorate(func: F) -> F:
        own = [p for p in inspect.signature(func, eval_str=True).parameters.values()]
        own = [p for p in own if p.name != "options"]
        names = {p.name for p in shared}

        @functools.wraps(func)
        def command(**kwargs: Any) -> Any:
            flags = {k: kwargs.pop(k) for k in list(kwargs) if k in names}
            return func(**kwargs, options=run_options(flags))

        params = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in own] + shared
        command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
        command.__annotations__ = {p.name: p.annotation for p in params}
        del command.__wrapped__  # typer must read the new signature, not the function's
        return command  # type: ignore[return-value]

    return decorate
