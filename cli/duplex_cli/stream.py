"""`duplex-cli stream`: a clip, WAV or image to a duplex session, with a run bundle."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from duplex_cli.display import LivePanel, print_summary, render_progress
from duplex_cli.options import (
    ADVANCED,
    INPUT,
    SERVER,
    SESSION,
    ApiKeyOpt,
    ChunkMsOpt,
    FrameMaxSideOpt,
    InstructionsOpt,
    JpegQualityOpt,
    JsonOpt,
    ModelOpt,
    OutputDirOpt,
    Preset,
    QuietOpt,
    ReconnectOpt,
    RefAudioOpt,
    RequireAudioOpt,
    SlidingWindow,
    Soundtrack,
    TemperatureOpt,
    UrlOpt,
    VerboseOpt,
    choices,
)
from duplex_cli.protocol_log import LoggedRunProgress, log_result
from duplex_cli.running import StopSignals, fail, note, setup_logging, stderr_console
from duplex_client.results import RunProgress, RunResult
from duplex_client.run import RunOptions, run_stream

Opt = typer.Option


def stream_command(
    input_video: Annotated[
        str | None,
        Opt(metavar="PATH", rich_help_panel=INPUT, help="Video clip (mp4, mov, mkv, webm...)."),
    ] = None,
    input_audio: Annotated[
        str | None,
        Opt(
            metavar="PATH",
            rich_help_panel=INPUT,
            help="Audio file (wav, flac, mp3, m4a, ogg); replaces a clip's soundtrack.",
        ),
    ] = None,
    input_image: Annotated[
        str | None,
        Opt(metavar="PATH", rich_help_panel=INPUT, help="Still image sent as every unit's frame."),
    ] = None,
    url: UrlOpt = None,
    model: ModelOpt = None,
    api_key: ApiKeyOpt = None,
    preset: Annotated[
        Preset, Opt(metavar=choices(Preset), rich_help_panel=SESSION, help="Session preset.")
    ] = Preset.minicpmo,
    ref_audio: RefAudioOpt = None,
    video_fps: Annotated[
        float, Opt(metavar="FPS", rich_help_panel=INPUT, help="Frames sampled per second.")
    ] = 1.0,
    frame_max_side: FrameMaxSideOpt = 0,
    stack_frames: Annotated[
        int,
        Opt(metavar="N", rich_help_panel=INPUT, help="N > 1 adds a composite of N-1 sub-frames."),
    ] = 1,
    jpeg_quality: JpegQualityOpt = 90,
    chunk_ms: ChunkMsOpt = 200,
    tail_silence_s: Annotated[
        float,
        Opt(metavar="SECONDS", rich_help_panel=INPUT, help="Seconds of silence after the input."),
    ] = 0.0,
    soundtrack: Annotated[
        Soundtrack,
        Opt(
            metavar=choices(Soundtrack),
            rich_help_panel=INPUT,
            help="A soundtrack longer or shorter than the video: trim, pad or send it full.",
        ),
    ] = Soundtrack.trim,
    realtime: Annotated[
        bool,
        Opt(
            "--realtime/--burst",
            metavar="",
            rich_help_panel=ADVANCED,
            help="Pace input on the media clock, or send it as fast as possible.",
        ),
    ] = True,
    no_realtime_pacing: Annotated[
        bool, Opt("--no-realtime-pacing", hidden=True, help="Deprecated alias of --burst.")
    ] = False,
    manual_commit: Annotated[
        bool,
        Opt(
            "--manual-commit",
            metavar="",
            rich_help_panel=SESSION,
            help="auto_response off: commit, then response.create.",
        ),
    ] = False,
    instructions: InstructionsOpt = None,
    temperature: TemperatureOpt = None,
    sliding_window: Annotated[
        SlidingWindow | None,
        Opt(metavar=choices(SlidingWindow), rich_help_panel=SESSION, help="Sliding window mode."),
    ] = None,
    basic_window_high_tokens: Annotated[
        int | None, Opt(metavar="N", rich_help_panel=ADVANCED, help="basic: trim above this.")
    ] = None,
    basic_window_low_tokens: Annotated[
        int | None, Opt(metavar="N", rich_help_panel=ADVANCED, help="basic: trim down to this.")
    ] = None,
    context_max_units: Annotated[
        int | None, Opt(metavar="N", rich_help_panel=ADVANCED, help="context: recent units kept.")
    ] = None,
    context_previous_max_tokens: Annotated[
        int | None, Opt(metavar="N", rich_help_panel=ADVANCED, help="context: earlier text cap.")
    ] = None,
    annotations: Annotated[
        Path | None,
        Opt(
            metavar="PATH",
            rich_help_panel=INPUT,
            help="User-speech segments for latency: a JSON list of {start_ms, end_ms}, or a "
            "Full-Duplex-Bench turn_taking/pause/interrupt/metadata JSON. Default: VAD.",
        ),
    ] = None,
    output_dir: OutputDirOpt = None,
    timeout_s: Annotated[
        float,
        Opt(
            metavar="SECONDS",
            rich_help_panel=ADVANCED,
            help="Seconds to wait for the answer after the input.",
        ),
    ] = 30.0,
    require_audio: RequireAudioOpt = False,
    reconnect: ReconnectOpt = True,
    reconnect_attempts: Annotated[
        int,
        Opt(
            metavar="N",
            rich_help_panel=ADVANCED,
            help="Reconnect attempts after a drop (jittered exponential backoff).",
        ),
    ] = 5,
    handshake_timeout_s: Annotated[
        float,
        Opt(metavar="SECONDS", rich_help_panel=SERVER, help="Seconds to wait for session.created."),
    ] = 30.0,
    json_output: JsonOpt = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Stream a clip/WAV/image on the media clock and write the run bundle."""
    setup_logging(verbose=verbose, quiet=quiet)
    knobs = {
        "basic_window_high_tokens": basic_window_high_tokens,
        "basic_window_low_tokens": basic_window_low_tokens,
        "context_max_units": context_max_units,
        "context_previous_max_tokens": context_previous_max_tokens,
    }
    err = stderr_console()
    options = RunOptions(
        input_video=input_video,
        input_audio=input_audio,
        input_image=input_image,
        model=model,
        preset=preset.value,
        api_key=api_key,
        ref_audio=ref_audio,
        video_fps=video_fps,
        frame_max_side=frame_max_side,
        stack_frames=stack_frames,
        jpeg_quality=jpeg_quality,
        chunk_ms=chunk_ms,
        tail_silence_s=tail_silence_s,
        soundtrack=soundtrack.value,
        realtime=realtime and not no_realtime_pacing,
        manual_commit=manual_commit,
        instructions=instructions,
        temperature=temperature,
        sliding_window=None if sliding_window is None else sliding_window.value,
        window_knobs={k: v for k, v in knobs.items() if v is not None},
        output_dir=output_dir,
        timeout_s=timeout_s,
        require_audio=require_audio,
        reconnect=reconnect,
        reconnect_attempts=reconnect_attempts,
        handshake_timeout_s=handshake_timeout_s,
        annotations=annotations,
    )
    show = sys.stdout.isatty() and not json_output and not quiet
    progress = LoggedRunProgress()
    progress.url = url
    try:
        if show:
            with LivePanel(lambda: render_progress(progress)):
                result = asyncio.run(_main(url, options, progress))
        else:
            result = asyncio.run(_main(url, options, progress))
    except Exception as exc:  # classified: usage (2), stopped (143/129), a bug (1)
        raise fail(exc, verbose=verbose, err=err) from None
    except KeyboardInterrupt as exc:
        raise fail(exc, verbose=verbose, err=err) from None
    log_result(result)
    _report(result, json_output=json_output, quiet=quiet, err=err)
    raise typer.Exit(result.exit_code)


async def _main(url: str | None, options: RunOptions, progress: RunProgress) -> RunResult:
    """The run, with SIGTERM/SIGHUP finishing the bundle as Ctrl-C does, and `-v` lines."""
    with StopSignals(progress) as stops:
        try:
            return await run_stream(url, options, progress=progress)
        except asyncio.CancelledError:
            if stops.received is not None:
                raise stops.received from None
            raise


def _report(result: RunResult, *, json_output: bool, quiet: bool, err: Console) -> None:
    """The result: JSON or the summary table, then warnings and the failure on stderr."""
    if json_output:
        sys.stdout.write(json.dumps(result.to_dict(), indent=2, ensure_ascii=False) + "\n")
    elif not quiet:  # the table is for people: stdout on a terminal, else stderr
        print_summary(Console(highlight=False, stderr=not sys.stdout.isatty()), result)
    for line in reconnect_lines(result):
        err.print(line)
    for warning in result.warnings:
        note(err, "warning", "yellow", warning)
    if not result.ok:
        note(err, "failed", "red", f"{result.error} (bundle: {result.bundle_dir})")


def reconnect_lines(result: RunResult) -> list[str]:
    """One stderr line per reconnection of the run (drops survived or not)."""
    rows = (result.timeline or {}).get("reconnects") or []
    lines = []
    for row in rows:
        started = row["started_offset_ms"] / 1000
        if row["outcome"] == "failed":
            lines.append(
                f"[red]connection lost[/] at {started:.1f} s: not resumed after "
                f"{row['attempts']} attempt(s)"
            )
            continue
        gap = (row["resumed_offset_ms"] - row["started_offset_ms"]) / 1000
        note = " (replay gap: resync required)" if row["outcome"] == "resync_required" else ""
        lines.append(
            f"[yellow]reconnected[/]: connection lost at {started:.1f} s, resumed {gap:.2f} s "
            f"later (attempt {row['attempts']}), {row['resent_appends']} append(s) resent{note}"
        )
    return lines
