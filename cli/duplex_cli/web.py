"""`duplex-cli web`: talk to the model from a browser, recorded like every other run.

One process serves the page and its same-origin socket (127.0.0.1 unless `--host` says
otherwise); the session, the API key and the recording stay here. The terminal shows the
page's URL (with the per-launch token), each session's state and `bundle: <dir>` at its
end. Ctrl-C (or SIGTERM) stops a running session (its bundle is finished) and exits 0.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import threading
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from duplex_cli.options import (
    ADVANCED,
    AUTO_PRESET,
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
    LivePreset,
    ModelOpt,
    ReconnectOpt,
    RefAudioOpt,
    RequireAudioOpt,
    TemperatureOpt,
    UrlOpt,
    VerboseOpt,
    choices,
    server_url,
)
from duplex_cli.running import fail, note, setup_logging, stderr_console
from duplex_cli.serve import is_loopback
from duplex_client.families import auto_preset
from duplex_client.protocol.dialects.detect import AUTO
from duplex_client.run.options import RunOptions
from duplex_client.run.result import EXIT_FAILED

Opt = typer.Option
#: The lines `-q` still prints: each session's bundle, and what the page reported wrong.
QUIET_KEEPS = ("bundle: ", "page: ", "refused ")


def open_warning(host: str) -> str:
    """The one line `web` prints when it listens beyond loopback (as `serve` does)."""
    return (
        f"warning: listening on {host}: the page is open to the network (anyone with its URL "
        "and token can talk to the model and read the sessions; browsers give the microphone "
        "only to https or localhost pages: prefer an SSH tunnel to 127.0.0.1)"
    )


def web_command(
    url: UrlOpt = None,
    model: ModelOpt = None,
    api_key: ApiKeyOpt = None,
    preset: Annotated[
        LivePreset,
        Opt(
            metavar=choices(LivePreset),
            rich_help_panel=SESSION,
            help=f"Session preset (auto: {auto_preset('model')} for model turns, "
            f"{auto_preset('vad')} for server VAD and push-to-talk). The page offers the "
            "preset's turn modes.",
        ),
    ] = AUTO_PRESET,
    ref_audio: RefAudioOpt = None,
    instructions: InstructionsOpt = None,
    temperature: TemperatureOpt = None,
    host: Annotated[
        str,
        Opt(metavar="HOST", rich_help_panel=SERVER, help="Where the page listens (loopback)."),
    ] = "127.0.0.1",
    port: Annotated[
        int,
        Opt(metavar="PORT", rich_help_panel=SERVER, help="The page's port (0: a free one)."),
    ] = 0,
    open_page: Annotated[
        bool,
        Opt(
            "--open/--no-open",
            metavar="",
            rich_help_panel=OUTPUT,
            help="Open the page in the default browser.",
        ),
    ] = True,
    output_dir: Annotated[
        Path | None,
        Opt(
            metavar="PATH",
            rich_help_panel=OUTPUT,
            help="Where each session's bundle goes: PATH/<time> (default ./runs/<time>).",
        ),
    ] = None,
    echo_gate: Annotated[
        bool,
        Opt(
            "--echo-gate",
            metavar="",
            rich_help_panel=ADVANCED,
            help="Half duplex: stop the mic while the assistant is audible.",
        ),
    ] = False,
    muted: Annotated[
        bool, Opt("--muted", metavar="", rich_help_panel=INPUT, help="Start with the mic muted.")
    ] = False,
    camera_off: Annotated[
        bool,
        Opt("--camera-off", metavar="", rich_help_panel=INPUT, help="Start with the camera off."),
    ] = False,
    frame_max_side: FrameMaxSideOpt = 640,
    jpeg_quality: JpegQualityOpt = 80,
    chunk_ms: ChunkMsOpt = 200,
    jitter_ms: Annotated[
        int,
        Opt(metavar="MS", rich_help_panel=ADVANCED, help="The page's jitter buffer for answers."),
    ] = 80,
    duration_s: Annotated[
        float | None,
        Opt(
            metavar="SECONDS",
            rich_help_panel=SESSION,
            help="Stop each session after this many seconds (default: until Stop).",
        ),
    ] = None,
    require_audio: RequireAudioOpt = False,
    server_script: Annotated[
        str | None,
        Opt(
            metavar="PATH",
            rich_help_panel=SERVER,
            help="Embedded server: JSON script for its scripted engine.",
        ),
    ] = None,
    reconnect: ReconnectOpt = True,
    dialect: DialectOpt = AUTO,
    quiet: Annotated[
        bool,
        Opt(
            "-q",
            "--quiet",
            metavar="",
            rich_help_panel=OUTPUT,
            help="Only the URL, each bundle and what went wrong (no session states).",
        ),
    ] = False,
    verbose: VerboseOpt = False,
) -> None:
    """Talk from a browser: the page's microphone and camera in, answers on its player."""
    setup_logging(verbose=verbose, quiet=quiet)
    err = stderr_console()
    out = Console(highlight=False, soft_wrap=True)
    options = RunOptions(
        model=model,
        preset=preset.value,
        api_key=api_key,
        ref_audio=ref_audio,
        instructions=instructions,
        temperature=temperature,
        echo_gate=echo_gate,
        start_muted=muted,
        camera_off=camera_off,
        frame_max_side=frame_max_side,
        jpeg_quality=jpeg_quality,
        chunk_ms=chunk_ms,
        jitter_ms=jitter_ms,
        duration_s=duration_s,
        require_audio=require_audio,
        server_script=server_script,
        reconnect=reconnect,
        dialect=dialect,
    )
    try:
        url = server_url(url)  # `--url`, else DUPLEX_URL (set but empty: refused)
        _check(url, options, port)
    except Exception as exc:
        raise fail(exc, verbose=verbose, err=err) from None
    if not is_loopback(host):
        err.print(open_warning(host), markup=False)
    try:
        asyncio.run(_serve(url, options, host, port, output_dir, open_page, out, quiet))
    except OSError as exc:
        note(err, "error", "red", f"cannot listen on {host}:{port}: {exc.strerror or exc}")
        raise typer.Exit(EXIT_FAILED) from None
    except Exception as exc:
        raise fail(exc, verbose=verbose, err=err) from None


def _check(url: str | None, options: RunOptions, port: int) -> None:
    """Refuse bad options before listening (exit 2): the URL, the options, the files named."""
    from duplex_client.client.transport import check_url
    from duplex_client.run.checks import check_url_options
    from duplex_client.run.prepare import prepare
    from duplex_client.usage import UsageError

    if not 0 <= port <= 65535:
        raise UsageError(f"port must be 0..65535, got {port}", param="port")
    if url is not None:  # an empty one is refused: it must not mean the embedded server
        check_url(url)
        check_url_options(options)
    options.validate(inputs="browser")
    prepare(options, inputs="browser")  # a reference voice that is no WAV is refused here


async def _serve(
    url: str | None,
    options: RunOptions,
    host: str,
    port: int,
    output_dir: Path | None,
    open_page: bool,
    out: Console,
    quiet: bool,
) -> None:
    from duplex_client.web import WebApp, WebConfig

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)

    def say(line: str, *, always: bool = False) -> None:
        # -q keeps the URL, each session's bundle and what went wrong; not the states
        if quiet and not (always or line.startswith(QUIET_KEEPS) or "error" in line):
            return
        out.print(line, markup=False)
        sys.stdout.flush()

    config = WebConfig(url=url, options=options, host=host, port=port, output_dir=output_dir)
    async with WebApp(config, say=say) as app:
        endpoint = url or "an embedded reference server per session"
        say(f"duplex-cli web: open {app.page_url}", always=True)
        say(f"model endpoint: {endpoint}; stop: Ctrl-C")
        if open_page:
            threading.Thread(target=_open, args=(app.page_url,), daemon=True).start()
        await stop.wait()
        say("stopping")
    say("stopped")


def _open(url: str) -> None:
    import webbrowser

    with contextlib.suppress(Exception):
        webbrowser.open(url)
