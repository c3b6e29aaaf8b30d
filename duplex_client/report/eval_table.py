"""The item table of the eval index: one row per summary row, sortable by any column.

Failed rows have class `failed`, timing-invalid ones `invalid`. Each cell carries its raw
value as `data-value`, which the page's small script sorts by: numbers numerically, text
naturally (`a2` before `a10`), empty cells last.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Sequence
from typing import Any

from duplex_client.bundle.eval_layout import SUMMARY_COLUMNS

#: The summary fields the item table shows, in order (extra manifest columns follow).
TABLE_COLUMNS = (
    "id", "repeat", "endpoint", "status", "timing_valid", "attempts", "duration_s", "turns",
    "latency_p50_ms", "latency_p95_ms", "first_answer_latency_p50_ms", "server_p50_ms",
    "overlap_p50_ms", "gap_p50_ms", "unanswered_turns", "cut_turns", "lateness_p99_ms",
    "drift_ms", "error",
)  # fmt: skip
NUMERIC_COLUMNS = frozenset(
    c for c in TABLE_COLUMNS if c.endswith(("_ms", "_s", "_turns")) or c in ("attempts", "turns")
) | {"repeat"}
#: Shown only when some row has a value.
OPTIONAL_COLUMNS = frozenset({"repeat", "expected"})
#: Summary fields never shown as extra columns (too long, or the link already).
HIDDEN_COLUMNS = frozenset({"transcript", "bundle"})
#: Longer cell texts are cut (the whole text is the cell's tooltip).
CELL_CHARS = 160

#: Sorts the item table by the clicked column: numbers numerically, text naturally, empty
#: cells last either way; a second click reverses. Each cell's `data-value` is its key.
SORT_SCRIPT = """<script>
(function () {
  var table = document.getElementById("items");
  var body = table.tBodies[0];
  var heads = Array.prototype.slice.call(table.tHead.rows[0].cells);
  function sortBy(th, col) {
    var dir = th.getAttribute("aria-sort") === "ascending" ? -1 : 1;
    heads.forEach(function (h) { h.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", dir === 1 ? "ascending" : "descending");
    var numeric = th.classList.contains("num");
    function key(tr) {
      var v = tr.cells[col].getAttribute("data-value");
      if (v === null || v === "") return null;
      return numeric ? Number(v) : v;
    }
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = key(a), y = key(b);
      if (x === null || y === null) return (x === null) - (y === null);
      var c = numeric ? x - y : x.localeCompare(y, undefined, {numeric: true});
      return c * dir;
    });
    rows.forEach(function (tr) { body.appendChild(tr); });
  }
  heads.forEach(function (th, col) {
    th.addEventListener("click", function () { sortBy(th, col); });
    th.addEventListener("keydown", function (e) {
      if (e.key === "Enter" || e.key === " ") { e.preventDefault(); sortBy(th, col); }
    });
  });
})();
</script>"""


def label(row: dict[str, Any]) -> str:
    """A row's item label: `id`, or `id/repeat` for a repeated item."""
    repeat = row.get("repeat")
    return str(row.get("id")) if repeat is None else f"{row.get('id')}/{repeat}"


def table_columns(rows: Sequence[dict[str, Any]]) -> list[str]:
    """The item table's columns: `TABLE_COLUMNS`, then `expected` and extra manifest columns.

    A column in `OPTIONAL_COLUMNS` (and every extra) appears only when some row has a value.
    """
    fixed = set(SUMMARY_COLUMNS)
    extras = [k for k in dict.fromkeys(k for row in rows for k in row) if k not in fixed]
    always = set(TABLE_COLUMNS) - OPTIONAL_COLUMNS
    return [
        c
        for c in [*TABLE_COLUMNS, "expected", *extras]
        if c not in HIDDEN_COLUMNS and (c in always or any(r.get(c) is not None for r in rows))
    ]


def header(column: str) -> str:
    """A column's header: the field name in words, its unit apart (`latency p50 (ms)`)."""
    for suffix, unit in (("_ms", " (ms)"), ("_s", " (s)")):
        if column.endswith(suffix):
            return column.removesuffix(suffix).replace("_", " ") + unit
    return column.replace("_", " ")


def _numeric(column: str, rows: Sequence[dict[str, Any]]) -> bool:
    if column in NUMERIC_COLUMNS:
        return True
    if column in SUMMARY_COLUMNS:
        return False
    values = [r.get(column) for r in rows if r.get(column) is not None]
    return bool(values) and all(_is_number(v) for v in values)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def cell_text(column: str, value: Any) -> str:
    """A value as a cell shows it (before escaping): `–` for null, ms to 0.1."""
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        return f"{value:.1f}" if column.endswith("_ms") else f"{value:g}"
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return str(value)


def sort_value(value: Any) -> str:
    """A cell's `data-value`: what the sort compares ('' sorts last)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if _is_number(value):
        return repr(value) if math.isfinite(value) else ""
    return cell_text("", value)


def _row_html(
    row: dict[str, Any], columns: Sequence[str], href: str | None, page_error: str | None
) -> str:
    classes = []
    if row.get("ok") is not True:
        classes.append("failed")
    if row.get("timing_valid") is False:
        classes.append("invalid")
    cells = []
    for column in columns:
        value = row.get(column)
        text = cell_text(column, value)
        shown = html.escape(text if len(text) <= CELL_CHARS else text[: CELL_CHARS - 1] + "…")
        attrs = f' data-value="{html.escape(sort_value(value))}"'
        if len(text) > CELL_CHARS:
            attrs += f' title="{html.escape(text)}"'
        if column == "id" and href is not None:
            shown = f'<a href="{html.escape(href)}">{shown}</a>'
        if column == "error" and page_error is not None:
            shown += f'<div class="page-error">no item page: {html.escape(page_error)}</div>'
        cls = ' class="num"' if _is_number(value) else ' class="error"' if column == "error" else ""
        cells.append(f"<td{cls}{attrs}>{shown}</td>")
    row_class = f' class="{" ".join(classes)}"' if classes else ""
    return f'<tr{row_class} data-item="{html.escape(label(row))}">{"".join(cells)}</tr>'


def item_table(
    rows: Sequence[dict[str, Any]],
    columns: Sequence[str],
    links: Sequence[tuple[str | None, str | None]],
) -> str:
    """The sortable `table#items`: one row per summary row; `links` are (href, page error)."""
    heads = []
    for column in columns:
        cls = ' class="num"' if _numeric(column, rows) else ""
        heads.append(
            f'<th{cls} tabindex="0" data-column="{html.escape(column)}" '
            f'title="{html.escape(column)}">{html.escape(header(column))}</th>'
        )
    body = "".join(
        _row_html(row, columns, href, error) for row, (href, error) in zip(rows, links, strict=True)
    )
    return (
        f'<table class="data" id="items"><thead><tr>{"".join(heads)}</tr></thead>'
        f"<tbody>{body}</tbody></table>"
    )
