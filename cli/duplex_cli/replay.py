"""`duplex-cli replay`: a recorded run's input sent again, byte for byte, as a new bundle."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from duplex_cli.display import print_summary
from duplex_cli.options import (
    INPUT,
    OUTPUT,
    ApiKeyOpt,
    JsonOpt,
    ModelOpt,
    QuietOpt,
    RefAudioOpt,
    UrlOpt,
    VerboseOpt,
    _opt,
    server_url,
)
from duplex_cli.running import fail, note, print_json, setup_logging, stderr_console, until_stopped
from duplex_client.bundle.layout import BundleLayout
from duplex_client.bundle.reader import read_optional
from duplex_client.replay.bundle_replay import replay_bundle, same_input
from duplex_client.report.diff import decision_changes
from duplex_client.run.progress import RunProgress
from duplex_client.run.result import RunResult


def replay_command(
    bundle: Annotated[
        Path,
        typer.Argument(
            metavar="BUNDLE",
            help="A run bundle (its kept payloads, else its source files re-derived).",
            show_default=False,
        ),
    ],
    url: UrlOpt = None,
    model: ModelOpt = None,
    api_key: ApiKeyOpt = None,
    ref_audio: RefAudioOpt = None,
    output_dir: Annotated[
        Path | None,
        _opt(
            "-o",
            "--output-dir",
            panel=OUTPUT,
            metavar="PATH",
            help="The replay's bundle (default ./runs/<time>).",
        ),
    ] = None,
    replan: Annotated[
        bool,
        _opt(
            "--replan",
            panel=INPUT,
            metavar="",
            help="On a server with another unit grid, re-plan the recorded source on its grid "
            "instead of refusing (the input is then not the recorded one; the result says so).",
        ),
    ] = False,
    sweep: Annotated[
        str | None,
        _opt(
            "--sweep",
            panel=INPUT,
            metavar="NAME=V1,V2,...",
            help="One replay per value of one condition (pause_ms, jitter_ms, drop_at_ms, "
            "noise_db), then a table of the turn metrics by value; -o is the sweep's folder.",
        ),
    ] = None,
    seed: Annotated[
        int,
        _opt("--seed", panel=INPUT, metavar="N", help="The sweep's random seed (jitter, noise)."),
    ] = 0,
    json_output: JsonOpt = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Send BUNDLE's recorded input again, byte for byte, and compare what came back."""
    setup_logging(verbose=verbose, quiet=quiet)
    err = stderr_console()
    if sweep is not None:
        options = {"model": model, "api_key": api_key, "ref_audio": ref_audio, "replan": replan}
        sweep_command(bundle, url, sweep, seed, output_dir, options, json_output, quiet, verbose)
    progress = RunProgress(figures=False)  # nothing displays a replay's progress
    kwargs: dict[str, Any] = {
        "output_dir": output_dir,
        "model": model,
        "api_key": api_key,
        "ref_audio": ref_audio,
        "progress": progress,
        "replan": replan,
    }
    try:
        result = asyncio.run(_main(bundle, url, kwargs, progress))
    except (Exception, KeyboardInterrupt) as exc:  # usage (2), stopped (130/143/129), bug (1)
        kept, as_json = progress.bundle_dir, json_output
        raise fail(exc, verbose=verbose, err=err, bundle=kept, json_output=as_json) from None
    comparison = compare(bundle, result)
    if json_output:
        doc = {**result.to_dict(), "replay_of": str(bundle), **comparison}
        sys.stdout.write(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    elif not quiet:
        console = Console(highlight=False, stderr=not sys.stdout.isatty())
        print_summary(console, result)
        print_comparison(console, comparison)
    for warning in result.warnings:
        note(err, "warning", "yellow", warning)
    if not result.ok:
        note(err, "failed", "red", f"{result.error} (bundle: {result.bundle_dir})")
    raise typer.Exit(result.exit_code)


async def _main(
    bundle: Path, url: str | None, kwargs: dict[str, Any], progress: RunProgress
) -> RunResult:
    return await until_stopped(progress, replay_bundle(bundle, server_url(url), **kwargs))


def compare(original: Path, result: RunResult) -> dict[str, Any]:
    """Whether the same input went out, and the units whose decision changed."""
    a, b = BundleLayout(original), BundleLayout(result.bundle_dir or Path())
    first, second = read_optional(a.timeline) or {}, read_optional(b.timeline) or {}
    return {
        "input_identical": same_input(first, second),
        "sent_sha256": (second.get("totals") or {}).get("sent_sha256"),
        "decision_changes": decision_changes(
            read_optional(a.result) or {}, read_optional(b.result) or {}
        ),
    }


def print_comparison(console: Console, comparison: dict[str, Any]) -> None:
    """`input identical: yes|no`, then a table of the units whose decision differs."""
    digest = comparison["sent_sha256"] or "none"
    identical = "yes" if comparison["input_identical"] else "NO"
    console.print(f"input identical: {identical} (sent_sha256 {digest[:16]})")
    changes = comparison["decision_changes"]
    if not changes:
        console.print("decisions: the same for every unit")
        return
    table = Table("unit", "original", "replay", box=None, pad_edge=False)
    for row in changes:
        table.add_row(str(row["unit_index"]), row["original"] or "–", row["replay"] or "–")
    console.print(f"decisions that differ: {len(changes)}")
    console.print(table)


def sweep_command(
    bundle: Path,
    url: str | None,
    spec: str,
    seed: int,
    output_dir: Path | None,
    options: dict[str, Any],
    json_output: bool,
    quiet: bool,
    verbose: bool,
) -> None:
    """`replay --sweep`: one replay per value, the table printed; exit 0 if every replay ran."""
    from duplex_client.replay.conditions import parse_sweep
    from duplex_client.replay.sweep import sweep_bundle
    from duplex_client.run.options import default_run_dir
    from duplex_client.usage import UsageError

    err = stderr_console()
    progress = RunProgress(figures=False)  # nothing displays a replay's progress

    async def run() -> Any:
        name, values = parse_sweep(spec)
        if options.pop("replan"):
            raise UsageError("--replan and --sweep are exclusive", keywords=())
        out = output_dir or default_run_dir()
        return await until_stopped(progress, sweep_bundle(
            bundle, server_url(url), name, values, output_dir=out, seed=seed, progress=progress,
            **{k: v for k, v in options.items() if v is not None},
        ))  # fmt: skip

    try:
        result = asyncio.run(run())
    except KeyboardInterrupt as exc:
        raise fail(exc, verbose=verbose, err=err) from None
    except Exception as exc:  # usage (2), stopped (143/129), a bug (1)
        raise fail(exc, verbose=verbose, err=err) from None
    if json_output:
        print_json(result.to_dict())
    elif not quiet:
        sys.stdout.write(result.markdown() + f"\nwritten: {result.output_dir}/sweep.md\n")
    for replay in result.results:
        for warning in replay.warnings:
            note(err, "warning", "yellow", warning)
    for row in result.rows:
        if not row["ok"]:
            note(err, "failed", "red", f"{row['error']} (bundle: {row['bundle_dir']})")
    raise typer.Exit(result.exit_code)
