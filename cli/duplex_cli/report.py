"""`duplex-cli report`: a timeline page for a run, a comparison of two, an eval's index."""

from __future__ import annotations

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
        written = _write(paths, output, png, thumbnails=not no_thumbnails)
    except (ReportInputError, ImportError) as exc:
        note(err, "error", "red", str(exc))
        raise typer.Exit(EXIT_USAGE) from None
    except Exception as exc:  # classified and reported in one line by fail()
        raise fail(exc, verbose=verbose, err=err) from None
    for path in written:
        typer.echo(str(path))


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
