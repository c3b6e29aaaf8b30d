"""The `duplex-cli` typer application."""

from __future__ import annotations

import importlib.metadata
from typing import Annotated

import typer

from duplex_cli.check import check_command
from duplex_cli.devices import devices_command
from duplex_cli.eval import EvalCommand, eval_command
from duplex_cli.live import live_command
from duplex_cli.replay import replay_command
from duplex_cli.report import report_command
from duplex_cli.serve import serve_command
from duplex_cli.stream import stream_command
from duplex_cli.web import web_command

app = typer.Typer(
    name="duplex-cli",
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


app.command("stream")(stream_command)
app.command("eval", cls=EvalCommand)(eval_command)
app.command("replay")(replay_command)
app.command("report")(report_command)
app.command("serve")(serve_command)
app.command("live")(live_command)
app.command("web")(web_command)
app.command("devices")(devices_command)
app.command("check")(check_command)


@app.command()
def version() -> None:
    """Print the version (the same as `duplex-cli --version`)."""
    typer.echo(f"duplex-cli {package_version()}")


def main() -> None:
    """Console-script entry point."""
    app()
