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
    OUTPUT,
    ApiKeyOpt,
    JsonOpt,
    ModelOpt,
    QuietOpt,
    RefAudioOpt,
    UrlOpt,
    VerboseOpt,
    _opt,
)
from duplex_cli.running import StopSignals, fail, note, setup_logging, stderr_console
from duplex_client.replay import decision_changes, replay_bundle, same_input
from duplex_client.results import RunProgress, RunResult


def replay_command(
    bundle: Annotated[
        Path,
        typer.Argument(
            metavar="BUNDLE",
            help="A run bundle recorded with --keep-payloads.",
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
    json_output: JsonOpt = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Send BUNDLE's recorded input again, byte for byte, and compare what came back."""
    setup_logging(verbose=verbose, quiet=quiet)
    err = stderr_console()
    progress = RunProgress()
    kwargs: dict[str, Any] = {
        "output_dir": output_dir,
        "model": model,
        "api_key": api_key,
        "ref_audio": ref_audio,
        "progress": progress,
    }
    try:
        result = asyncio.run(_main(bundle, url, kwargs, progress))
    except KeyboardInterrupt as exc:
        raise fail(exc, verbose=verbose, err=err) from None
    except Exception as exc:  # usage (2), stopped (143/129), a bug (1)
        raise fail(exc, verbose=verbose, err=err) from None
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
    with StopSignals(progress) as stops:
        try:
            return await replay_bundle(bundle, url, **kwargs)
        except asyncio.CancelledError:
            if stops.received is not None:
                raise stops.received from None
            raise


def _load(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def compare(original: Path, result: RunResult) -> dict[str, Any]:
    """Whether the same input went out, and the units whose decision changed."""
    new = result.bundle_dir or Path()
    first, second = _load(original / "input_timeline.json"), _load(new / "input_timeline.json")
    return {
        "input_identical": same_input(first, second),
        "sent_sha256": (second.get("totals") or {}).get("sent_sha256"),
        "decision_changes": decision_changes(
            _load(original / "result.json"), _load(new / "result.json")
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
