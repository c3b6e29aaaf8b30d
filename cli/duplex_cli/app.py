"""The `duplex-cli` typer application."""

from __future__ import annotations

import importlib.metadata
import sys
from typing import Annotated

import typer

from duplex_cli.cache import cache_app
from duplex_cli.check import check_command
from duplex_cli.devices import devices_command
from duplex_cli.eval import EvalCommand, eval_command
from duplex_cli.live import live_command
from duplex_cli.options import Command, Group
from duplex_cli.replay import replay_command
from duplex_cli.report import report_command
from duplex_cli.running import note, stderr_console
from duplex_cli.serve import serve_command
from duplex_cli.stream import stream_command
from duplex_cli.web import web_command

app = typer.Typer(
    name="duplex-cli",
    cls=Group,
    help="Full-duplex realtime sessions with omni models: stream clips, talk live "
    "(terminal or browser), serve.",
    no_args_is_help=True,
    add_completion=False,
)


def package_version() -> str:
    """The installed `duplex-cli` version, from the package metadata."""
    try:
        return importlib.metadata.version("duplex-cli")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"duplex-cli {package_version()}")
        raise typer.Exit()


@app.callback()
def main_options(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            metavar="",
            is_eager=True,
            callback=_print_version,
            help="Print the version and exit.",
        ),
    ] = False,
) -> None:
    """Full-duplex realtime sessions with omni models: stream clips, talk live, serve."""


app.command("stream", cls=Command)(stream_command)
app.command("eval", cls=EvalCommand)(eval_command)
app.command("replay", cls=Command)(replay_command)
app.command("report", cls=Command)(report_command)
app.command("serve", cls=Command)(serve_command)
app.command("live", cls=Command)(live_command)
app.command("web", cls=Command)(web_command)
app.command("devices", cls=Command)(devices_command)
app.command("check", cls=Command)(check_command)
app.add_typer(cache_app)


@app.command(cls=Command)
def version() -> None:
    """Print the version (the same as `duplex-cli --version`)."""
    typer.echo(f"duplex-cli {package_version()}")


def main() -> None:
    """Console-script entry point: a usage error (a bad choice, an unknown flag) is one
    `error:` line on stderr and exit 2, as every other refused input is."""
    # click's `UsageError` (typer's own copy in recent typer): `BadParameter`'s base.
    usage: type[Exception] = next(
        c for c in typer.BadParameter.__mro__ if c.__name__ == "UsageError"
    )
    try:
        code = app(standalone_mode=False)
    except usage as exc:
        # `duplex-cli` alone: typer printed the help (typer tells it by name, as here)
        if type(exc).__name__ != "NoArgsIsHelpError":
            note(stderr_console(), "error", "red", usage_line(exc))
        sys.exit(getattr(exc, "exit_code", 2))
    except typer.Abort:
        note(stderr_console(), "error", "red", "aborted")
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)


def usage_line(exc: Exception) -> str:
    """typer's message on one line, without pydantic's `Value error, ` inside it."""
    message = " ".join(getattr(exc, "format_message", lambda: str(exc))().split())
    message = message.replace(": Value error, ", ": ")
    ctx = getattr(exc, "ctx", None)
    if ctx is not None and ctx.command.get_help_option(ctx) is not None:
        message += f" (see {ctx.command_path} {ctx.help_option_names[0]})"
    return message
