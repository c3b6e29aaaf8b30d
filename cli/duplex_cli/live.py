"""`duplex-cli live`: talk to a model with a microphone and a camera from the terminal."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import signal
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from duplex_cli.display import LivePanel
from duplex_cli.live_display import print_live_summary, render_live
from duplex_client.live.controls import LiveControls, PttMode, PushToTalk
from duplex_client.live.devices import DeviceError
from duplex_client.live.keys import KeyInput, NoKeys, TerminalKeys
from duplex_client.live.options import LiveOptions, LiveUsageError
from duplex_client.live.progress import LiveProgress
from duplex_client.live.run import run_live
from duplex_client.protocol.errors import DuplexClientError
from duplex_client.results import EXIT_INTERRUPTED, EXIT_USAGE, RunResult

Opt = typer.Option


def live_command(
    url: Annotated[
        str | None,
        Opt(help="Server URL (ws/wss/http/https). Default: an embedded reference server."),
    ] = None,
    model: Annotated[str, Opt(help="Model name sent to the server.")] = "openbmb/MiniCPM-o-4_5",
    api_key: Annotated[
        str | None, Opt(envvar="DUPLEX_API_KEY", help="Bearer key (or env DUPLEX_API_KEY).")
    ] = None,
    turn: Annotated[
        str, Opt(help="Turns: model (model decides, continuous), vad (server VAD) or ptt.")
    ] = "model",
    ptt_mode: Annotated[
        str, Opt(help="Push-to-talk key: toggle (press, press again) or hold (auto-repeat).")
    ] = "toggle",
    preset: Annotated[
        str, Opt(help="Session preset: auto, minicpmo, joyai, aura or none.")
    ] = "auto",
    ref_audio: Annotated[str | None, Opt(help="Reference voice WAV (MiniCPM-o).")] = None,
    mic: Annotated[str | None, Opt(help="Microphone: device index or name part.")] = None,
    mic_file: Annotated[
        str | None, Opt(help="Play this audio file as the microphone (real-time pace).")
    ] = None,
    no_mic: Annotated[bool, Opt(help="No microphone (camera only).")] = False,
    camera: Annotated[str | None, Opt(help="Camera index (default 0).")] = None,
    camera_file: Annotated[
        str | None, Opt(help="Use a video file or an image as the camera.")
    ] = None,
    no_camera: Annotated[bool, Opt(help="No camera (audio only).")] = False,
    speaker: Annotated[str | None, Opt(help="Speaker: device index or name part.")] = None,
    no_playback: Annotated[bool, Opt(help="Do not play answers (they are still saved).")] = False,
    echo_gate: Annotated[
        bool, Opt(help="Half duplex: stop the mic while the assistant is audible (speakers).")
    ] = False,
    muted: Annotated[bool, Opt(help="Start with the microphone muted.")] = False,
    camera_off: Annotated[bool, Opt(help="Start with the camera off.")] = False,
    frame_max_side: Annotated[int, Opt(help="Downscale frames to this longest side.")] = 640,
    jpeg_quality: Annotated[int, Opt(help="JPEG quality 1..100.")] = 80,
    chunk_ms: Annotated[int, Opt(help="Audio per append in ms.")] = 200,
    jitter_ms: Annotated[int, Opt(help="Answer audio buffered before playing.")] = 80,
    duration_s: Annotated[
        float | None, Opt(help="Stop after this many seconds (default: until q/Ctrl-C).")
    ] = None,
    at: Annotated[
        list[str] | None,
        Opt(help="Scripted action MS:ACTION (mute, unmute, talk_down, talk_up, ...), repeatable."),
    ] = None,
    instructions: Annotated[str | None, Opt(help="System prompt.")] = None,
    temperature: Annotated[float | None, Opt(help="Sampling temperature.")] = None,
    output_dir: Annotated[
        Path | None, Opt(help="Run bundle directory (default ./runs/<time>).")
    ] = None,
    require_audio: Annotated[
        bool, Opt(help="Embedded server: require audio in every unit (fallback units).")
    ] = False,
    server_script: Annotated[
        str | None, Opt(help="Embedded server: JSON script for its scripted engine.")
    ] = None,
    no_reconnect: Annotated[
        bool, Opt(help="Do not reconnect and resume after a dropped connection.")
    ] = False,
    json_output: Annotated[bool, Opt("--json", help="Print the result as JSON on stdout.")] = False,
    quiet: Annotated[bool, Opt("-q", "--quiet", help="No display and no summary.")] = False,
    verbose: Annotated[bool, Opt("-v", "--verbose", help="Log protocol activity.")] = False,
) -> None:
    """Talk live: microphone and camera in, answers to the speaker, run bundle written."""
    if verbose:
        logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    options = LiveOptions(
        model=model,
        preset=preset,
        turn=turn,  # type: ignore[arg-type]
        ptt_mode=ptt_mode,  # type: ignore[arg-type]
        api_key=api_key,
        ref_audio=ref_audio,
        instructions=instructions,
        temperature=temperature,
        mic=mic,
        mic_file=mic_file,
        no_mic=no_mic,
        camera=camera,
        camera_file=camera_file,
        no_camera=no_camera,
        speaker=speaker,
        no_playback=no_playback,
        echo_gate=echo_gate,
        start_muted=muted,
        camera_off=camera_off,
        frame_max_side=frame_max_side,
        jpeg_quality=jpeg_quality,
        chunk_ms=chunk_ms,
        jitter_ms=jitter_ms,
        duration_s=duration_s,
        actions=tuple(at or ()),
        output_dir=output_dir,
        require_audio=require_audio,
        server_script=server_script,
        reconnect=not no_reconnect,
    )
    show = sys.stdout.isatty() and not json_output and not quiet
    keys: KeyInput = TerminalKeys() if sys.stdin.isatty() else NoKeys()
    progress = LiveProgress()
    try:
        options.validate()
        controls = LiveControls(
            muted=muted, camera_on=not camera_off, ptt=PushToTalk(_ptt_mode(ptt_mode))
        )
        result = asyncio.run(_main(url, options, progress, controls, keys, show))
    except KeyboardInterrupt:
        err.print("[yellow]interrupted[/]: the bundle keeps everything received so far")
        raise typer.Exit(EXIT_INTERRUPTED) from None
    except (LiveUsageError, DeviceError, DuplexClientError, ValueError) as exc:
        err.print(f"[red]error[/]: {exc}")
        raise typer.Exit(EXIT_USAGE) from None
    finally:
        keys.stop()
    _report(result, progress, json_output=json_output, quiet=quiet, show=show, err=err)
    raise typer.Exit(result.exit_code)


def _ptt_mode(value: str) -> PttMode:
    if value not in ("toggle", "hold"):
        raise LiveUsageError("--ptt-mode must be toggle or hold")
    return value  # type: ignore[return-value]


async def _main(
    url: str | None,
    options: LiveOptions,
    progress: LiveProgress,
    controls: LiveControls,
    keys: KeyInput,
    show: bool,
) -> RunResult:
    """Run with Ctrl-C as a clean stop (a second Ctrl-C aborts) and keys while running."""
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    presses = 0

    def on_sigint() -> None:
        nonlocal presses
        presses += 1
        controls.apply("quit")
        if presses > 1 and task is not None:
            task.cancel()

    with contextlib.suppress(NotImplementedError, RuntimeError):
        loop.add_signal_handler(signal.SIGINT, on_sigint)
    keys.start(loop, controls.key)
    try:
        if show:
            with LivePanel(lambda: render_live(progress), refresh_per_second=10):
                return await run_live(url, options, progress=progress, controls=controls)
        return await run_live(url, options, progress=progress, controls=controls)
    except asyncio.CancelledError:
        raise KeyboardInterrupt from None
    finally:
        keys.stop()
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.remove_signal_handler(signal.SIGINT)


def _report(
    result: RunResult,
    progress: LiveProgress,
    *,
    json_output: bool,
    quiet: bool,
    show: bool,
    err: Console,
) -> None:
    if json_output:
        sys.stdout.write(json.dumps(result.to_dict(), indent=2, ensure_ascii=False) + "\n")
    elif not quiet:
        print_live_summary(Console(highlight=False), result)
    if not show and not quiet:
        for warning in progress.warnings:
            err.print(f"[yellow]warning[/]: {warning}")
    if not result.ok:
        err.print(f"[red]failed[/]: {result.error} (bundle: {result.bundle_dir})")
