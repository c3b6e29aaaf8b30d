"""`duplex-cli devices`: audio devices (PortAudio) and cameras (OpenCV) live mode can use."""

from __future__ import annotations

import dataclasses
import json
import sys
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from duplex_cli.options import QuietOpt, VerboseOpt
from duplex_cli.running import setup_logging
from duplex_client.media.devices.lookup import (
    DEFAULT_CAMERA_PROBES,
    NO_DEVICE_HINT,
    DeviceError,
    audio_devices,
    camera_devices,
    load_sounddevice,
)

Opt = typer.Option


def devices_command(
    cameras: Annotated[
        int, Opt(metavar="N", help="Camera indexes to probe (0..N-1); 0 skips cameras.")
    ] = DEFAULT_CAMERA_PROBES,
    json_output: Annotated[
        bool, Opt("--json", metavar="", help="Print the lists as JSON.")
    ] = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """List microphones, speakers and cameras (use the index with --mic/--speaker/--camera)."""
    setup_logging(verbose=verbose, quiet=quiet)
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    audio_error: str | None = None
    audio: list[dict[str, Any]] = []
    try:
        audio = [dataclasses.asdict(d) for d in audio_devices(load_sounddevice())]
    except DeviceError as exc:
        audio_error = str(exc)
    found = camera_devices(probes=cameras) if cameras > 0 else []
    if json_output:
        doc = {"audio": audio, "audio_error": audio_error, "cameras": found}
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
    elif not quiet:
        _print(Console(highlight=False), audio, found, cameras)
    if audio_error:
        err.print(f"[red]audio[/]: {audio_error}")
        raise typer.Exit(1)


def _print(console: Console, audio: list[dict[str, Any]], cameras: list[int], probes: int) -> None:
    table = Table(title="audio devices", title_justify="left")
    for col in ("index", "name", "host API", "in", "out", "rate", "default"):
        table.add_column(col)
    for d in audio:
        flags = (("input", d["default_input"]), ("output", d["default_output"]))
        marks = [m for m, on in flags if on]
        table.add_row(
            str(d["index"]),
            d["name"],
            d["hostapi"],
            str(d["max_input_channels"]),
            str(d["max_output_channels"]),
            f"{d['default_samplerate']:g}",
            ", ".join(marks),
        )
    if audio:
        console.print(table)
    else:
        console.print(f"audio devices: none ({NO_DEVICE_HINT})")
    if probes:
        shown = ", ".join(str(i) for i in cameras) if cameras else f"none among 0..{probes - 1}"
        console.print(f"cameras: {shown}")
