"""`duplex-cli stream`: a clip, WAV or image to a duplex session, with a run bundle."""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from duplex_cli.display import LivePanel, print_summary, render_progress
from duplex_client.protocol.errors import DuplexClientError
from duplex_client.results import RunProgress, RunResult
from duplex_client.run import EXIT_INTERRUPTED, EXIT_USAGE, RunOptions, UsageError, run_stream

Opt = typer.Option


def stream_command(
    input_video: Annotated[
        str | None, Opt(help="Video clip to stream (mp4, mov, mkv, webm...).")
    ] = None,
    input_audio: Annotated[
        str | None, Opt(help="Audio file (wav, flac, mp3, m4a, ogg); replaces a clip's soundtrack.")
    ] = None,
    input_image: Annotated[
        str | None, Opt(help="Still image sent as the frame of every unit.")
    ] = None,
    url: Annotated[
        str | None,
        Opt(help="Server URL (ws/wss/http/https). Default: an embedded reference server."),
    ] = None,
    model: Annotated[str, Opt(help="Model name sent to the server.")] = "openbmb/MiniCPM-o-4_5",
    api_key: Annotated[
        str | None, Opt(envvar="DUPLEX_API_KEY", help="Bearer key (or env DUPLEX_API_KEY).")
    ] = None,
    preset: Annotated[str, Opt(help="Session preset: minicpmo, joyai, aura or none.")] = "minicpmo",
    ref_audio: Annotated[
        str | None, Opt(help="Reference voice WAV (required by MiniCPM-o on a real server).")
    ] = None,
    video_fps: Annotated[float, Opt(help="Frame sampling rate (frames per second).")] = 1.0,
    frame_max_side: Annotated[
        int, Opt(help="Downscale frames to this longest side (0: keep).")
    ] = 0,
    stack_frames: Annotated[
        int, Opt(help="N > 1 adds a composite of N-1 sub-frames per unit.")
    ] = 1,
    jpeg_quality: Annotated[int, Opt(help="JPEG quality 1..100.")] = 90,
    chunk_ms: Annotated[int, Opt(help="Audio per append in ms.")] = 200,
    tail_silence_s: Annotated[float, Opt(help="Seconds of silence after the input.")] = 0.0,
    soundtrack: Annotated[str, Opt(help="Soundtrack policy: trim, pad or full.")] = "trim",
    no_realtime_pacing: Annotated[bool, Opt(help="Send as fast as possible.")] = False,
    manual_commit: Annotated[
        bool, Opt(help="auto_response off: commit, then response.create.")
    ] = False,
    instructions: Annotated[str | None, Opt(help="System prompt.")] = None,
    temperature: Annotated[
        float | None, Opt(help="Sampling temperature (0 = deterministic).")
    ] = None,
    sliding_window: Annotated[
        str | None, Opt(help="Sliding window: off, basic or context.")
    ] = None,
    basic_window_high_tokens: Annotated[int | None, Opt(help="basic: trim above this.")] = None,
    basic_window_low_tokens: Annotated[int | None, Opt(help="basic: trim down to this.")] = None,
    context_max_units: Annotated[int | None, Opt(help="context: recent units kept.")] = None,
    context_previous_max_tokens: Annotated[
        int | None, Opt(help="context: earlier text cap.")
    ] = None,
    annotations: Annotated[
        Path | None,
        Opt(
            help="User-speech segments for latency: a JSON list of {start_ms, end_ms}, or a "
            "Full-Duplex-Bench turn_taking/pause/interrupt/metadata JSON. Default: VAD."
        ),
    ] = None,
    output_dir: Annotated[
        Path | None, Opt(help="Run bundle directory (default ./runs/<time>).")
    ] = None,
    timeout_s: Annotated[float, Opt(help="Seconds to wait for the answer after the input.")] = 30.0,
    require_audio: Annotated[
        bool, Opt(help="Embedded server: require audio in every unit (fallback units).")
    ] = False,
    no_reconnect: Annotated[
        bool, Opt(help="Do not reconnect and resume after a dropped connection.")
    ] = False,
    reconnect_attempts: Annotated[
        int, Opt(help="Reconnect attempts after a drop (jittered exponential backoff).")
    ] = 5,
    handshake_timeout_s: Annotated[float, Opt(help="Seconds to wait for session.created.")] = 30.0,
    json_output: Annotated[bool, Opt("--json", help="Print the result as JSON on stdout.")] = False,
    quiet: Annotated[bool, Opt("-q", "--quiet", help="No display and no summary.")] = False,
    verbose: Annotated[bool, Opt("-v", "--verbose", help="Log protocol activity.")] = False,
) -> None:
    """Stream a clip/WAV/image on the media clock and write the run bundle."""
    if verbose:
        logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    knobs = {
        "basic_window_high_tokens": basic_window_high_tokens,
        "basic_window_low_tokens": basic_window_low_tokens,
        "context_max_units": context_max_units,
        "context_previous_max_tokens": context_previous_max_tokens,
    }
    options = RunOptions(
        input_video=input_video,
        input_audio=input_audio,
        input_image=input_image,
        model=model,
        preset=preset,
        api_key=api_key,
        ref_audio=ref_audio,
        video_fps=video_fps,
        frame_max_side=frame_max_side,
        stack_frames=stack_frames,
        jpeg_quality=jpeg_quality,
        chunk_ms=chunk_ms,
        tail_silence_s=tail_silence_s,
        soundtrack=soundtrack,
        realtime=not no_realtime_pacing,
        manual_commit=manual_commit,
        instructions=instructions,
        temperature=temperature,
        sliding_window=sliding_window,
        window_knobs={k: v for k, v in knobs.items() if v is not None},
        output_dir=output_dir,
        timeout_s=timeout_s,
        require_audio=require_audio,
        reconnect=not no_reconnect,
        reconnect_attempts=reconnect_attempts,
        handshake_timeout_s=handshake_timeout_s,
        annotations=annotations,
    )
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    show = sys.stdout.isatty() and not json_output and not quiet
    progress = RunProgress()
    try:
        if show:
            with LivePanel(lambda: render_progress(progress)):
                result = asyncio.run(run_stream(url, options, progress=progress))
        else:
            result = asyncio.run(run_stream(url, options, progress=progress))
    except KeyboardInterrupt:
        err.print("[yellow]interrupted[/]: the bundle keeps everything received so far")
        raise typer.Exit(EXIT_INTERRUPTED) from None
    except (UsageError, DuplexClientError, ValueError) as exc:
        err.print(f"[red]error[/]: {exc}")
        raise typer.Exit(EXIT_USAGE) from None
    _report(result, json_output=json_output, quiet=quiet, err=err)
    raise typer.Exit(result.exit_code)


def _report(result: RunResult, *, json_output: bool, quiet: bool, err: Console) -> None:
    if json_output:
        sys.stdout.write(json.dumps(result.to_dict(), indent=2, ensure_ascii=False) + "\n")
    elif not quiet:
        print_summary(Console(highlight=False), result)
    for line in reconnect_lines(result):
        err.print(line)
    for warning in result.warnings:
        err.print(f"[yellow]warning[/]: {warning}")
    if not result.ok:
        err.print(f"[red]failed[/]: {result.error} (bundle: {result.bundle_dir})")


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
