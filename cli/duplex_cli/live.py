"""`duplex-cli live`: talk to a model with a microphone and a camera from the terminal."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from typing import Annotated

import typer
from rich.console import Console

from duplex_cli.display import LivePanel
from duplex_cli.live_display import print_live_summary, render_live
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
    JsonOpt,
    LivePreset,
    ModelOpt,
    OutputDirOpt,
    PttMode,
    QuietOpt,
    ReconnectOpt,
    RefAudioOpt,
    RequireAudioOpt,
    TemperatureOpt,
    Turn,
    UrlOpt,
    VerboseOpt,
    choices,
    server_url,
)
from duplex_cli.protocol_log import LoggedRunProgress, log_result
from duplex_cli.running import (
    FORCE_AFTER,
    fail,
    force_exit,
    note,
    print_json,
    setup_logging,
    stderr_console,
    until_stopped,
)
from duplex_client.families import auto_preset
from duplex_client.media.devices.keys import KeyInput, NoKeys, TerminalKeys
from duplex_client.protocol.dialects.detect import AUTO
from duplex_client.run.controls import LiveControls
from duplex_client.run.live import run_live
from duplex_client.run.options import RunOptions
from duplex_client.run.progress import RunProgress
from duplex_client.run.result import EXIT_INTERRUPTED, RunResult
from duplex_client.run.sources.devices import controls_for

Opt = typer.Option


def live_command(
    url: UrlOpt = None,
    model: ModelOpt = None,
    api_key: ApiKeyOpt = None,
    turn: Annotated[
        Turn,
        Opt(
            metavar=choices(Turn),
            rich_help_panel=SESSION,
            help="Turns: model (model decides, continuous), vad (server VAD) or ptt.",
        ),
    ] = Turn.model,
    ptt_mode: Annotated[
        PttMode,
        Opt(
            metavar=choices(PttMode),
            rich_help_panel=SESSION,
            help="Push-to-talk key: toggle (press, press again) or hold (auto-repeat).",
        ),
    ] = PttMode.toggle,
    preset: Annotated[
        LivePreset,
        Opt(
            metavar=choices(LivePreset),
            rich_help_panel=SESSION,
            help=f"Session preset (auto: {auto_preset('model')} for --turn model, "
            f"else {auto_preset('vad')}).",
        ),
    ] = AUTO_PRESET,
    ref_audio: RefAudioOpt = None,
    mic: Annotated[
        str | None,
        Opt(metavar="DEVICE", rich_help_panel=INPUT, help="Microphone: device index or name part."),
    ] = None,
    mic_file: Annotated[
        str | None,
        Opt(
            metavar="PATH",
            rich_help_panel=INPUT,
            help="Play this audio file as the microphone (real-time pace).",
        ),
    ] = None,
    no_mic: Annotated[
        bool,
        Opt("--no-mic", metavar="", rich_help_panel=INPUT, help="No microphone (camera only)."),
    ] = False,
    camera: Annotated[
        str | None, Opt(metavar="INDEX", rich_help_panel=INPUT, help="Camera index (default 0).")
    ] = None,
    camera_file: Annotated[
        str | None,
        Opt(
            metavar="PATH",
            rich_help_panel=INPUT,
            help="Use a video file or an image as the camera.",
        ),
    ] = None,
    no_camera: Annotated[
        bool, Opt("--no-camera", metavar="", rich_help_panel=INPUT, help="No camera (audio only).")
    ] = False,
    speaker: Annotated[
        str | None,
        Opt(metavar="DEVICE", rich_help_panel=OUTPUT, help="Speaker: device index or name part."),
    ] = None,
    playback: Annotated[
        bool,
        Opt(
            "--playback/--no-playback",
            metavar="",
            rich_help_panel=OUTPUT,
            help="Play answers on the speaker (they are saved either way).",
        ),
    ] = True,
    echo_gate: Annotated[
        bool,
        Opt(
            "--echo-gate",
            metavar="",
            rich_help_panel=ADVANCED,
            help="Half duplex: stop the mic while the assistant is audible (speakers).",
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
        Opt(metavar="MS", rich_help_panel=ADVANCED, help="Answer audio buffered before playing."),
    ] = 80,
    duration_s: Annotated[
        float | None,
        Opt(
            metavar="SECONDS",
            rich_help_panel=SESSION,
            help="Stop after this many seconds (default: until q/Ctrl-C).",
        ),
    ] = None,
    at: Annotated[
        list[str] | None,
        Opt(
            metavar="MS:ACTION",
            rich_help_panel=SESSION,
            help="Scripted action (mute, unmute, talk_down, talk_up, ...), repeatable.",
        ),
    ] = None,
    instructions: InstructionsOpt = None,
    temperature: TemperatureOpt = None,
    output_dir: OutputDirOpt = None,
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
    json_output: JsonOpt = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Talk live: microphone and camera in, answers to the speaker, run bundle written."""
    setup_logging(verbose=verbose, quiet=quiet)
    err = stderr_console()
    options = RunOptions(
        model=model,
        preset=preset.value,
        turn=turn.value,
        ptt_mode=ptt_mode.value,
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
        no_playback=not playback,
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
        reconnect=reconnect,
        dialect=dialect,
    )
    show = sys.stdout.isatty() and not json_output and not quiet
    keys: KeyInput = TerminalKeys() if sys.stdin.isatty() else NoKeys()
    progress = LoggedRunProgress(figures=False)  # the device source keeps live's own
    try:
        progress.url = url = server_url(url)
        options.validate(inputs="devices")
        controls = controls_for(options)
        result = asyncio.run(_main(url, options, progress, controls, keys, show))
    except (Exception, KeyboardInterrupt) as exc:  # usage (2), stopped (130/143/129), bug (1)
        kept, as_json = progress.bundle_dir, json_output
        raise fail(exc, verbose=verbose, err=err, bundle=kept, json_output=as_json) from None
    finally:
        keys.stop()
    log_result(result)
    _report(result, progress, json_output=json_output, quiet=quiet, show=show, err=err)
    raise typer.Exit(result.exit_code)


async def _main(
    url: str | None,
    options: RunOptions,
    progress: RunProgress,
    controls: LiveControls,
    keys: KeyInput,
    show: bool,
) -> RunResult:
    """Run with Ctrl-C as a clean stop (a second Ctrl-C aborts, the bundle still finished; a
    third exits at once, naming what is incomplete) and keys while running.

    SIGTERM and SIGHUP cancel at once (the bundle is still finished): exit 143 / 129.
    """
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    presses = 0

    def on_sigint() -> None:
        nonlocal presses
        presses += 1
        controls.apply("quit")
        if presses >= FORCE_AFTER:
            force_exit(signal.SIGINT, progress, EXIT_INTERRUPTED)
        if presses > 1 and task is not None:
            task.cancel()

    with contextlib.suppress(NotImplementedError, RuntimeError):
        loop.add_signal_handler(signal.SIGINT, on_sigint)
    keys.start(loop, controls.key)
    try:
        panel = LivePanel(lambda: render_live(progress), refresh_per_second=10) if show else None
        with panel or contextlib.nullcontext():
            live = run_live(url, options, progress=progress, controls=controls)
            return await until_stopped(progress, live, sigint=False)  # Ctrl-C is ours
    except asyncio.CancelledError:  # not a stop signal: Ctrl-C twice
        raise KeyboardInterrupt from None
    finally:
        keys.stop()
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.remove_signal_handler(signal.SIGINT)


def _report(
    result: RunResult,
    progress: RunProgress,
    *,
    json_output: bool,
    quiet: bool,
    show: bool,
    err: Console,
) -> None:
    if json_output:
        print_json(result.to_dict())
    elif not quiet:
        print_live_summary(Console(highlight=False, stderr=not sys.stdout.isatty()), result)
    if not show and not quiet:
        for warning in progress.warnings:
            note(err, "warning", "yellow", warning)
    if not result.ok:
        note(err, "failed", "red", f"{result.error} (bundle: {result.bundle_dir})")
