"""The index page of an eval: its aggregate, per-turn histograms and a sortable item table.

`write_eval_report(eval_dir)` reads `summary.jsonl` (the rows) and `summary.md` (the
aggregate) and writes one self-contained page, `report.html` in the eval directory. Each
item with a run bundle also gets its own page, `report.html` inside its bundle, linked from
its id. A bundle that cannot be read costs its item the link, not the index. The page embeds
the table's data (`<script id="eval-data">`), which its script and the tests read.
"""

from __future__ import annotations

import html
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import quote

from duplex_client.analysis.pooling import turn_values
from duplex_client.bundle.eval_layout import EVAL_FILE, INDEX_FILE, SUMMARY_MD, is_eval_dir
from duplex_client.bundle.layout import BundleLayout
from duplex_client.report.bundle_reader import ReportInputError
from duplex_client.report.eval_data import pooled_items, pooled_turns, read_summary_rows
from duplex_client.report.eval_table import SORT_SCRIPT, cell_text, item_table, label, table_columns
from duplex_client.report.html import json_script, page, require_bokeh, warning_banner

__all__ = ["EvalReport", "ItemPageWriter", "is_eval_dir", "render_markdown", "write_eval_report"]

#: Writes the page of the bundle (first path) to the output (second); returns the output.
ItemPageWriter = Callable[[Path, Path], Path]

PAGE_STYLE = """<style>
.aggregate table { border-collapse: collapse; margin: 6px 0; }
.aggregate th, .aggregate td { border-bottom: 1px solid #ddd; padding: 3px 8px; }
.aggregate th { background: #f3f4f7; }
.histograms { display: flex; flex-wrap: wrap; gap: 16px; }
.histogram.empty { width: 380px; color: #555; }
th[aria-sort="ascending"]::after { content: " ▲"; }
th[aria-sort="descending"]::after { content: " ▼"; }
.page-error { color: #a00; font-size: 12px; } td.error { max-width: 32em; }
</style>"""


@dataclass
class EvalReport:
    """What `write_eval_report` wrote: the index, the item pages, the pages it could not."""

    index: Path
    #: Item label (`id`, or `id/repeat`) → its page.
    pages: dict[str, Path] = field(default_factory=dict)
    #: Item label → why its page was not written (one line).
    failures: dict[str, str] = field(default_factory=dict)


def render_markdown(text: str) -> str:
    """Markdown as HTML: CommonMark with tables, raw HTML escaped, headings one level down."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    tokens = md.parse(text)
    for token in tokens:
        if token.type in ("heading_open", "heading_close"):
            token.tag = f"h{min(int(token.tag[1:]) + 1, 6)}"
    return str(md.renderer.render(tokens, md.options, {}))


def _bundle_dir(eval_dir: Path, row: dict[str, Any]) -> Path | None:
    """The row's bundle directory (None: the row names none); raises if it leaves `eval_dir`."""
    bundle = row.get("bundle")
    if not isinstance(bundle, str) or not bundle:
        return None
    rel = PurePosixPath(bundle)
    if rel.is_absolute() or ".." in rel.parts or "\\" in bundle:
        raise ReportInputError(f"bundle {bundle!r} is not a folder inside the eval directory")
    path = eval_dir.joinpath(*rel.parts)
    if not path.is_dir():
        raise ReportInputError(f"{path}: no such directory")
    return path


def _default_writer(thumbnails: bool) -> ItemPageWriter:
    from duplex_client.report.run_page import write_run_report

    def write(bundle_dir: Path, output: Path) -> Path:
        return write_run_report(bundle_dir, output, thumbnails=thumbnails)

    return write


def _href(target: Path, index_dir: Path) -> str:
    rel = os.path.relpath(target.resolve(), index_dir.resolve())
    return quote(Path(rel).as_posix())


def _options_html(eval_dir: Path) -> str:
    """`eval.json`'s settings and run options, folded away (empty when unreadable)."""
    try:
        doc = json.loads((eval_dir / EVAL_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ""
    if not isinstance(doc, dict):
        return ""
    pairs = [
        (k, v)
        for section in ("settings", "options")
        if isinstance(doc.get(section), dict)
        for k, v in doc[section].items()
    ]
    rows = "".join(
        f"<tr><td>{html.escape(str(k))}</td><td>{html.escape(cell_text('', v))}</td></tr>"
        for k, v in pairs
    )
    return (
        f"<details><summary>How the eval ran ({EVAL_FILE})</summary>"
        f'<table class="data">{rows}</table></details>'
    )


def write_eval_report(
    eval_dir: Path,
    output: Path | None = None,
    *,
    thumbnails: bool = True,
    write_item_page: ItemPageWriter | None = None,
) -> EvalReport:
    """Write the eval's index page (default `eval_dir/report.html`) and each item's page.

    `write_item_page(bundle_dir, bundle_dir / "report.html")` writes an item page; by
    default the run page (`thumbnails` goes to it). An item whose page fails (a
    `ReportInputError`, or anything else its bundle raises) is listed in
    `EvalReport.failures` and shown unlinked with the error; only an unreadable
    `summary.jsonl` stops the index.
    """
    from duplex_client.files import write_text_atomic
    from duplex_client.report.eval_charts import HISTOGRAMS, histograms_html

    require_bokeh()
    rows = read_summary_rows(eval_dir)
    output = output if output is not None else eval_dir / INDEX_FILE
    writer = write_item_page if write_item_page is not None else _default_writer(thumbnails)
    report = EvalReport(index=output)
    links: list[tuple[str | None, str | None]] = []
    for row in rows:
        name = label(row)
        try:
            bundle_dir = _bundle_dir(eval_dir, row)
            if bundle_dir is None:
                links.append((None, None))
                continue
            written = writer(bundle_dir, BundleLayout(bundle_dir).report)
        except Exception as exc:  # one bundle's page, whatever broke it, never the index
            known = isinstance(exc, ReportInputError | OSError)
            report.failures[name] = " ".join(
                (
                    str(exc) if known else f"{type(exc).__module__}.{type(exc).__qualname__}: {exc}"
                ).split()
            )
            links.append((None, report.failures[name]))
            continue
        report.pages[name] = written
        links.append((_href(written, output.parent), None))
    warnings: list[str] = []
    try:
        aggregate = render_markdown((eval_dir / SUMMARY_MD).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        aggregate = ""
        warnings.append(f"{SUMMARY_MD} not read ({exc}): no aggregate shown")
    turns, pool_warnings = pooled_turns(eval_dir, rows)
    values = turn_values(turns)
    pooled = {name: values[name] for name in HISTOGRAMS}
    warnings.extend(pool_warnings)
    charts, chart_script = histograms_html(pooled)
    columns = table_columns(rows)
    data = {
        "eval_dir": str(eval_dir),
        "columns": columns,
        "rows": [{c: row.get(c) for c in columns} for row in rows],
        "links": [{"href": href, "error": error} for href, error in links],
        "pooled": pooled,
    }
    title = eval_dir.resolve().name or str(eval_dir)
    n_pooled = len(pooled_items(rows))
    body = (
        f"{PAGE_STYLE}<h1>Eval {html.escape(title)}</h1>"
        f'<div class="meta">{html.escape(str(eval_dir.resolve()))} · {len(rows)} item run(s) · '
        f"{len(report.pages)} item page(s)</div>"
        f"{warning_banner(warnings)}{_options_html(eval_dir)}"
        f'<section class="aggregate">{aggregate}</section>'
        "<h2>Per-turn distributions</h2>"
        f'<p class="meta">Every turn of the {n_pooled} ok, timing-valid item(s), from each '
        "bundle's result.json; overlap counts heard turns only, as summary.md does.</p>"
        f"{charts}<h2>Items</h2>"
        '<p class="meta">Click a column to sort by it; an id opens the item\'s page.</p>'
        f"{item_table(rows, columns, links)}{json_script('eval-data', data)}"
    )
    output.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(
        output, page(f"duplex eval {title}", body, scripts=chart_script + SORT_SCRIPT)
    )
    return report
