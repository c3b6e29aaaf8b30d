"""`duplex-cli stream`: a clip, WAV or image to a duplex session, with a run bundle."""

from __future__ import annotations

import asyncio
import sys

import typer
from rich.console import Console

from duplex_cli.display import LivePanel, print_summary, render_progress
from duplex_cli.options import JsonOpt, QuietOpt, UrlOpt, VerboseOpt, server_url
from duplex_cli.protocol_log import LoggedRunProgress, log_result
from duplex_cli.run_flags import takes_run_flags
from duplex_cli.running import fail, note, print_json, setup_logging, stderr_console, until_stopped
from duplex_client.run.options import RunOptions
from duplex_client.run.progress import RunProgress
from duplex_client.run.result import RunResult
from duplex_client.run.stream import run_stream


@takes_run_flags()
def stream_command(
    url: UrlOpt = None,
    json_output: JsonOpt = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
    *,
    options: RunOptions,
) -> None:
    """Stream a clip/WAV/image on the media clock and write the run bundle."""
    setup_logging(verbose=verbose, quiet=quiet)
    err = stderr_console()
    show = sys.stdout.isatty() and not json_output and not quiet
    progress = LoggedRunProgress(figures=show or verbose)  # the panel, or `-v` decisions
    try:
        progress.url = url = server_url(url)
        if show:
            with LivePanel(lambda: render_progress(progress)):
                result = asyncio.run(_main(url, options, progress))
        else:
            result = asyncio.run(_main(url, options, progress))
    except (Exception, KeyboardInterrupt) as exc:  # usage (2), stopped (130/143/129), bug (1)
        kept, as_json = progress.bundle_dir, json_output
        raise fail(exc, verbose=verbose, err=err, bundle=kept, json_output=as_json) from None
    log_result(result)
    _report(result, json_output=json_output, quiet=quiet, err=err)
    raise typer.Exit(result.exit_code)


async def _main(url: str | None, options: RunOptions, progress: RunProgress) -> RunResult:
    """The run, with SIGTERM/SIGHUP finishing the bundle as Ctrl-C does, and `-v` lines."""
    return await until_stopped(progress, run_stream(url, options, progress=progress))


def _report(result: RunResult, *, json_output: bool, quiet: bool, err: Console) -> None:
    """The result: JSON or the summary table, then warnings and the failure on stderr."""
    if json_output:
        print_json(result.to_dict())
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
