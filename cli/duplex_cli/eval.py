"""`duplex-cli eval`: many clips against one or more endpoints, resumable, with a summary."""

from __future__ import annotations

import asyncio
import dataclasses
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from duplex_cli.eval_display import EvalDisplay, print_eval_summary
from duplex_cli.options import (
    OUTPUT,
    SERVER,
    Command,
    JsonOpt,
    QuietOpt,
    VerboseOpt,
    _opt,
    choices,
    server_url,
)
from duplex_cli.run_flags import takes_run_flags
from duplex_cli.running import (
    Stopped,
    fail,
    note,
    print_json,
    setup_logging,
    stderr_console,
    until_stopped,
)
from duplex_client.eval.api import EvalResult, run_eval_async
from duplex_client.eval.runner import EvalProgress
from duplex_client.run.options import RunOptions
from duplex_client.run.result import EXIT_INTERRUPTED

EVAL = "Eval"
LOCAL_RAY = "local"


class Layout(StrEnum):
    """How to read the input: by its shape, or forced."""

    auto = "auto"
    dir = "dir"
    manifest = "manifest"
    fdb = "fdb"
    bundles = "bundles"
    omniinteract = "omniinteract"
    omni_duplexeval = "omni-duplexeval"


class Export(StrEnum):
    """Export formats of an eval."""

    fdb = "fdb"
    omniinteract = "omniinteract"
    omni_duplexeval = "omni-duplexeval"


class EvalCommand(Command):
    """The eval command: a bare `--ray` (no address after it) means a local Ray."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        """Give a bare `--ray` its implicit value, `local`, then parse as usual."""
        out: list[str] = []
        for i, arg in enumerate(args):
            out.append(arg)
            following = args[i + 1] if i + 1 < len(args) else None
            if arg == "--ray" and (following is None or following.startswith("-")):
                out.append(LOCAL_RAY)
        return super().parse_args(ctx, out)


class ServerEngine(StrEnum):
    """The embedded reference server's engine."""

    speech = "speech"
    scripted = "scripted"


@takes_run_flags(exclude=("input_video", "input_audio", "input_image", "output_dir", "annotations"))
def eval_command(
    source: Annotated[
        Path,
        typer.Argument(
            metavar="SOURCE",
            help="A directory of media files, a .jsonl/.csv manifest, or a Full-Duplex-Bench tree.",
            show_default=False,
        ),
    ],
    output_dir: Annotated[
        Path,
        _opt(panel=OUTPUT, metavar="PATH", help="Eval directory; the same one resumes the eval."),
    ],
    url: Annotated[
        list[str] | None,
        _opt(
            panel=SERVER,
            metavar="URL",
            help="Server URL; give it again for more endpoints (or DUPLEX_URL). Default: an "
            "embedded server.",
        ),
    ] = None,
    concurrency: Annotated[
        int, _opt(panel=EVAL, metavar="N", help="Items at once per endpoint.")
    ] = 1,
    layout: Annotated[
        Layout, _opt(panel=EVAL, metavar=choices(Layout), help="How to read SOURCE.")
    ] = Layout.auto,
    repeat: Annotated[int, _opt(panel=EVAL, metavar="K", help="Runs per item (sampling).")] = 1,
    limit: Annotated[
        int | None, _opt(panel=EVAL, metavar="N", help="Only the first N items.")
    ] = None,
    filter_: Annotated[
        str | None,
        _opt("--filter", panel=EVAL, metavar="GLOB", help="Only items whose id matches."),
    ] = None,
    retries: Annotated[
        int,
        _opt(panel=EVAL, metavar="N", help="Tries again after an endpoint fault (with backoff)."),
    ] = 2,
    rerun_failed: Annotated[
        bool,
        _opt("--rerun-failed", panel=EVAL, metavar="", help="Run failed items again on resume."),
    ] = False,
    each_endpoint: Annotated[
        bool | None,
        _opt(
            "--each-endpoint/--share-items",
            panel=EVAL,
            metavar="",
            help="Run every item on every --url and compare them (DIR/endpoint-<n>/, "
            "compare.md), or share the items out. Default: each endpoint when --dialect names "
            "different dialects, else shared.",
        ),
    ] = None,
    max_lateness_ms: Annotated[
        float,
        _opt(
            panel=EVAL,
            metavar="MS",
            help="Send lateness p99 (or drift) above this marks an item timing-invalid.",
        ),
    ] = 20.0,
    cpu_budget: Annotated[
        float | None,
        _opt(
            panel=EVAL,
            metavar="SHARE",
            help="Start items only while their predicted CPU fits this share of the client's "
            "cores (0-1; default 0.8); --concurrency is the upper bound.",
        ),
    ] = None,
    export: Annotated[
        Export | None,
        _opt(panel=OUTPUT, metavar=choices(Export), help="Also write a benchmark's output tree."),
    ] = None,
    export_dir: Annotated[
        Path | None, _opt(panel=OUTPUT, metavar="PATH", help="Export tree (default DIR/<export>).")
    ] = None,
    ray: Annotated[
        str | None,
        _opt(
            panel=EVAL,
            metavar="[ADDRESS]",
            help="Run items as Ray tasks: a local Ray, or the cluster at ADDRESS.",
        ),
    ] = None,
    server_engine: Annotated[
        ServerEngine | None,
        _opt(panel=SERVER, metavar=choices(ServerEngine), help="The embedded server's engine."),
    ] = None,
    json_output: JsonOpt = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
    *,
    options: RunOptions,
) -> None:
    """Run every item of SOURCE and write a bundle per item and a summary."""
    setup_logging(verbose=verbose, quiet=quiet)
    err = stderr_console()
    progress = EvalProgress()
    show = sys.stderr.isatty() and not json_output and not quiet
    # `--dialect duplex,openai`: one per --url, in order (docs/dialects.md)
    dialects = [d.strip() for d in options.dialect.split(",")]
    kwargs = {
        "output_dir": output_dir,
        "urls": list(url or []),
        "concurrency": concurrency,
        "repeat": repeat,
        "retries": retries,
        "rerun_failed": rerun_failed,
        "each_endpoint": each_endpoint,
        "max_lateness_ms": max_lateness_ms,
        "cpu_budget": cpu_budget,
        "layout": None if layout is Layout.auto else layout.value,
        "limit": limit,
        "pattern": filter_,
        "export": None if export is None else export.value,
        "export_dir": export_dir,
        "ray": None if ray is None else ("" if ray == LOCAL_RAY else ray),
        "server_engine": None if server_engine is None else server_engine.value,
        "options": dataclasses.replace(options, dialect=dialects[0]),
        "dialects": dialects,
        "progress": progress,
    }
    try:
        env_url = None if url else server_url(None)
        if env_url is not None:
            kwargs["urls"] = [env_url]
        with EvalDisplay(progress, enabled=show):
            result = asyncio.run(_main(source, kwargs, progress))
    except KeyboardInterrupt:
        _interrupted(err, progress, output_dir, "interrupted")
        raise typer.Exit(EXIT_INTERRUPTED) from None
    except Stopped as exc:  # SIGINT / SIGTERM / SIGHUP: 130 / 143 / 129
        _interrupted(err, progress, output_dir, exc.reason)
        raise typer.Exit(exc.exit_code) from None
    except Exception as exc:  # usage (2), a bug (1)
        raise fail(exc, verbose=verbose, err=err) from None
    _report(result, json_output=json_output, quiet=quiet, err=err)
    raise typer.Exit(result.exit_code)


async def _main(source: Path, kwargs: dict[str, object], progress: EvalProgress) -> EvalResult:
    return await until_stopped(progress, run_eval_async(source, **kwargs))  # type: ignore[arg-type]


def _interrupted(err: Console, progress: EvalProgress, out: Path, how: str) -> None:
    note(
        err,
        how,
        "yellow",
        f"{progress.done} of {progress.total} item(s) finished, summary in {out}; "
        "run the same command again to resume",
    )


def _report(result: EvalResult, *, json_output: bool, quiet: bool, err: Console) -> None:
    if json_output:
        print_json(result.to_dict())
    elif not quiet:
        print_eval_summary(Console(highlight=False, stderr=not sys.stdout.isatty()), result)
    for line in result.notes:
        note(err, "note", "yellow", line)
    if result.error:
        note(err, "failed", "red", result.error)
    elif result.summary.get("failed"):
        failed = result.summary["failed"]
        note(err, "failed", "red", f"{failed} item(s) failed (summary: {result.output_dir})")
