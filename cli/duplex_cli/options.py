"""Options shared by `stream`, `live` (and `eval`): defined once, as `Annotated` aliases.

Choices are `StrEnum`s so `--help` shows `[a|b|c]` and a bad value is typer's usage error
(exit 2); the preset choices are built from the families table (`duplex_client.families`).
Help panels group a command's options: Input, Server, Session, Output, Advanced.
"""

from __future__ import annotations

import os
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperArgument, TyperCommand, TyperGroup

from duplex_client import families
from duplex_client.run.options import DIALECT_CHOICES
from duplex_client.usage import UsageError

INPUT, SERVER, SESSION, OUTPUT, ADVANCED = "Input", "Server", "Session", "Output", "Advanced"
#: The model asked for when nothing else names one (the default family's).
DEFAULT_MODEL = families.DEFAULT_MODEL


def choices(enum: type[StrEnum]) -> str:
    """The `[a|b|c]` metavar of a choice option."""
    return "[" + "|".join(member.value for member in enum) + "]"


# Members computed from the families table: mypy cannot list them (hence the ignores), so
# code names a member by value, `Preset("minicpmo")`, never as an attribute.
Preset = StrEnum("Preset", {name: name for name in families.PRESET_CHOICES})  # type: ignore[misc]
Preset.__doc__ = "Session presets of a file run (`stream`, `eval`): the families, then `none`."
_LIVE_PRESETS = {name: name for name in families.LIVE_PRESET_CHOICES}
LivePreset = StrEnum("LivePreset", _LIVE_PRESETS)  # type: ignore[misc]
LivePreset.__doc__ = "Session presets of `live`: `auto` (from `--turn`), then those of `stream`."
#: `stream`'s default preset: the default family.
DEFAULT_PRESET = Preset(families.DEFAULT_FAMILY)
#: `live`'s default preset: chosen from `--turn`.
AUTO_PRESET = LivePreset("auto")


class PlainTypes:
    """Help without typer's type placeholders: `--help` and flags show no `<bool>`, and
    arguments (named by their metavar) no `<path>` or `<list[Path]>` beside the name."""

    def get_help_option(self, ctx: Any) -> Any:
        """typer's `--help`, with an empty metavar (it takes no value)."""
        option = super().get_help_option(ctx)  # type: ignore[misc]
        if option is not None and option.metavar is None:
            option.metavar = ""
        return option

    def get_params(self, ctx: Any) -> list[Any]:
        """The parameters, each argument's type column left empty (its metavar names it)."""
        params: list[Any] = super().get_params(ctx)  # type: ignore[misc]
        for param in params:
            if isinstance(param, TyperArgument):
                param.display_type_rich = _no_type  # type: ignore[method-assign]
        return params


def _no_type(ctx: Any) -> None:
    return None


class Command(PlainTypes, TyperCommand):
    """Every `duplex-cli` command: typer's, with plain help (`PlainTypes`)."""


class Group(PlainTypes, TyperGroup):
    """The `duplex-cli` group: typer's, with plain help (`PlainTypes`)."""


def default_models_help() -> str:
    """The default model of each family that names one, for `--model`'s help."""
    named = [f"{f.name}: {f.default_model}" for f in families.FAMILIES if f.default_model]
    return "; ".join([*named, "others: none"])


class Soundtrack(StrEnum):
    """What to do when a clip's soundtrack and video differ in length."""

    trim = "trim"
    pad = "pad"
    full = "full"


class SlidingWindow(StrEnum):
    """Server-side sliding window modes."""

    off = "off"
    basic = "basic"
    context = "context"


class Turn(StrEnum):
    """Who ends a user turn in `live`."""

    model = "model"
    vad = "vad"
    ptt = "ptt"


class PttMode(StrEnum):
    """How the push-to-talk key works."""

    toggle = "toggle"
    hold = "hold"


def _opt(*names: str, panel: str, metavar: str | None = None, **kw: Any) -> Any:
    """A typer option in a help panel (bool flags pass `metavar=""`: no `<bool>`)."""
    return typer.Option(*names, rich_help_panel=panel, metavar=metavar, **kw)


# Server
UrlOpt = Annotated[
    str | None,
    _opt(
        panel=SERVER,
        metavar="URL",
        help="Server URL (ws/wss/http/https), or DUPLEX_URL. Default: an embedded reference "
        "server.",
    ),
]
#: The environment variable `--url` falls back to.
URL_ENV = "DUPLEX_URL"


def server_url(url: str | None) -> str | None:
    """`--url`, else `$DUPLEX_URL`, else None (the embedded server).

    Set but empty or blank, either is a usage error: an unset shell variable behind `--url`
    must not measure the embedded CPU server instead of the one meant (`run_session` refuses
    an empty `--url`; this refuses an empty `DUPLEX_URL`).
    """
    if url is not None:
        return url
    env = os.environ.get(URL_ENV)
    if env is not None and not env.strip():
        raise UsageError(
            f"{URL_ENV} is set but empty: give ws://host:port or http://host:port, or unset "
            "it for the embedded reference server",
            param="url",
            keywords=(),
        )
    return env


ModelOpt = Annotated[
    str | None,
    _opt(
        panel=SERVER,
        metavar="NAME",
        help="Model name sent to the server. Default: the one model the server lists "
        f"(/v1/models), else the preset's ({default_models_help()}).",
    ),
]
ApiKeyOpt = Annotated[
    str | None,
    _opt(
        panel=SERVER,
        metavar="KEY",
        envvar="DUPLEX_API_KEY",
        show_envvar=False,
        help="Bearer key (or env DUPLEX_API_KEY).",
    ),
]
RequireAudioOpt = Annotated[
    bool,
    _opt(
        "--require-audio",
        panel=SERVER,
        metavar="",
        help="Embedded server: require audio in every unit (fallback units).",
    ),
]

# Session
RefAudioOpt = Annotated[
    str | None,
    _opt(
        panel=SESSION,
        metavar="PATH",
        help="Reference voice WAV ("
        + ", ".join(f.title for f in families.FAMILIES if f.reference_voice)
        + " on a real server).",
    ),
]
InstructionsOpt = Annotated[str | None, _opt(panel=SESSION, metavar="TEXT", help="System prompt.")]
TemperatureOpt = Annotated[
    float | None,
    _opt(panel=SESSION, metavar="T", help="Sampling temperature (0 = deterministic)."),
]

# Input
FrameMaxSideOpt = Annotated[
    int, _opt(panel=INPUT, metavar="PX", help="Downscale frames to this longest side (0: keep).")
]
JpegQualityOpt = Annotated[int, _opt(panel=INPUT, metavar="N", help="JPEG quality 1..100.")]

DialectOpt = Annotated[
    str,
    _opt(
        panel=SERVER,
        metavar="|".join(DIALECT_CHOICES),
        help="The wire the endpoint speaks: duplex (vLLM-Omni's), openai (OpenAI Realtime GA) "
        "or gpt-live (GPT-Live); auto: as the endpoint shows it, else duplex. "
        "docs/dialects.md.",
    ),
]

# Advanced
ChunkMsOpt = Annotated[int, _opt(panel=ADVANCED, metavar="MS", help="Audio per append in ms.")]
ReconnectOpt = Annotated[
    bool,
    _opt(
        "--reconnect/--no-reconnect",
        panel=ADVANCED,
        metavar="",
        help="Reconnect and resume after a dropped connection.",
    ),
]

# Output
OutputDirOpt = Annotated[
    Path | None,
    _opt(panel=OUTPUT, metavar="PATH", help="Run bundle directory (default ./runs/<time>)."),
]
JsonOpt = Annotated[
    bool, _opt("--json", panel=OUTPUT, metavar="", help="Print the result as JSON on stdout.")
]
QuietOpt = Annotated[
    bool,
    _opt(
        "-q",
        "--quiet",
        panel=OUTPUT,
        metavar="",
        help="No display and no summary (warnings still print).",
    ),
]
VerboseOpt = Annotated[
    bool,
    _opt(
        "-v",
        "--verbose",
        panel=OUTPUT,
        metavar="",
        help="Log protocol activity (connection, handshake, commits, responses) and tracebacks.",
    ),
]
