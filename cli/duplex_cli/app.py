"""The `duplex-cli` typer application."""

from __future__ import annotations

import typer

from duplex_cli.devices import devices_command
from duplex_cli.live import live_command
from duplex_cli.serve import serve_command
from duplex_cli.stream import stream_command
from duplex_client import __version__

app = typer.Typer(
    name="duplex-cli",
    help="Full-duplex realtime sessions with omni models: stream clips, talk live, serve.",
    no_args_is_help=True,
    add_completion=False,
)


app.command("stream")(stream_command)
app.command("serve")(serve_command)
app.command("live")(live_command)
app.command("devices")(devices_command)


@app.command()
def version() -> None:
    """Print the SDK version."""
    typer.echo(__version__)


def main() -> None:
    """Console-script entry point."""
    app()
