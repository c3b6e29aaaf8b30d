"""`duplex-cli report`: a timeline page for a run, a comparison of two, an eval's index."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from duplex_cli.options import OUTPUT, _opt
from duplex_cli.running import fail, note, stderr_console
from duplex_client.bundle.layout import BundleLayout
from duplex_client.report.bundle_reader import ReportInputError
from duplex_client.run.result import EXIT_USAGE


def report_command(
    paths: Annotated[
        list[Path],
        typer.Argument(
            metavar="RUN_DIR [RUN_B] | EVAL_DIR",
            help="A run bundle (its page), two bundles (their comparison) or an eval's output "
            "folder (an index page and one page per item).",
            show_default=False,
        ),
    ],
    output: Annotated[
        Path | None,
        _opt(
            "-o",
            "--output",
            panel=OUTPUT,
            metavar="PATH",
            help="The HTML file (default: report.html in the run or eval folder; "
            "compare_<A>_<B>.html here for two runs).",
        ),
    ] = None,
    png: Annotated[
        Path | None,
        _opt(
            "--png",
            panel=OUTPUT,
            metavar="PATH",
            help="Also write a static figure of the same tracks (matplotlib) as a PNG.",
        ),
    ] = None,
    no_thumbnails: Annotated[
        bool,
        _opt("--no-thumbnails", panel=OUTPUT, metavar="", help="Leave frame thumbnails out."),
    ] = False,
    verbose: Annotated[
        bool, _opt("-v", "--verbose", panel=OUTPUT, metavar="", help="Tracebacks on failure.")
    ] = False,
) -> None:
    """Write a self-contained HTML page (no network needed) of a run, two runs or an eval."""
    err = stderr_console()
    try:
        for target, flag in ((output, "-o"), (png, "--png")):
            check_target(target, flag)
        written = _write(paths, output, png, thumbnails=not no_thumbnails)
    except (ReportInputError, ImportError) as exc:
        note(err, "error", "red", str(exc))
        raise typer.Exit(EXIT_USAGE) from None
    except OSError as exc:
        asked = _asked_target(exc, ((output, "-o"), (png, "--png")))
        if asked is None:  # not where the report was asked to go: classified by fail()
            raise fail(exc, verbose=verbose, err=err) from None
        note(err, "error", "red", f"{asked}: cannot write there ({exc.strerror or exc})")
        raise typer.Exit(EXIT_USAGE) from None
    except Exception as exc:  # classified and reported in one line by fail()
        raise fail(exc, verbose=verbose, err=err) from None
    for path in written:
        typer.echo(str(path))


def check_target(path: Path | None, flag: str) -> None:
    """`ReportInputError` (one line, exit 2) before any work when `path` cannot be written."""
    if path is None:
        return
    if path.is_dir():
        raise ReportInputError(f"{flag} {path}: is a directory: give the file to write")
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        raise ReportInputError(f"{flag} {path}: cannot write there ({folder} is not a directory)")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ReportInputError(f"{flag} {path}: cannot write there (permission denied on {folder})")


def _asked_target(exc: OSError, targets: tuple[tuple[Path | None, str], ...]) -> str | None:
    """`-o PATH` / `--png PATH` when an OS error was about that file (or its temporary twin)."""
    if not exc.filename:
        return None
    failed = Path(os.fsdecode(exc.filename)).absolute()
    for target, flag in targets:
        if target is not None and failed.parent == target.absolute().parent:
            return f"{flag} {target}"
    return None


def _write(
    paths: list[Path], output: Path | None, png: Path | None, *, thumbnails: bool
) -> list[Path]:
    from duplex_client.report.eval_page import is_eval_dir

    if len(paths) > 2:
        raise ReportInputError(f"report takes one or two folders, got {len(paths)}")
    if len(paths) == 2:
        from duplex_client.report.compare_page import write_compare_report

        if png is not None:
            raise ReportInputError("--png draws one run: give one RUN_DIR")
        a, b = paths
        target = output or Path(f"compare_{a.name}_{b.name}.html")
        return [write_compare_report(a, b, target)]
    path = paths[0]
    if is_eval_dir(path):
        return _write_eval(path, output, png, thumbnails=thumbnails)
    from duplex_client.report.run_page import write_run_report

    written = [write_run_report(path, output or BundleLayout(path).report, thumbnails=thumbnails)]
    if png is not None:
        from duplex_client.report.bundle_reader import load_run_bundle
        from duplex_client.report.figure import run_figure, save_png

        data = load_run_bundle(path, thumbnails=thumbnails)
        written.append(save_png(run_figure(data), png))
    return written


def _write_eval(
    path: Path, output: Path | None, png: Path | None, *, thumbnails: bool
) -> list[Path]:
    from duplex_client.report.eval_page import write_eval_report

    report = write_eval_report(path, output, thumbnails=thumbnails)
    err = stderr_console()
    for item, problem in report.failures.items():
        note(err, "warning", "yellow", f"{item}: no page ({problem})")
    written = [report.index]
    if png is not None:
        from duplex_client.report.eval_data import read_summary_rows
        from duplex_client.report.figure import save_png
        from duplex_client.report.figure_eval import eval_figure, eval_turns

        rows = read_summary_rows(path)
        written.append(save_png(eval_figure(rows, eval_turns(path, rows)), png))
    return written
