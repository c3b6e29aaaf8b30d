"""The eval index page, written from a real eval output (embedded server, generated clips)."""

from __future__ import annotations

import json
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest

from duplex_client.eval.api import EvalResult
from duplex_client.eval.summary import EvalSummary, percentiles
from duplex_client.report.bundle_reader import ReportInputError
from duplex_client.report.eval_data import check_eval_dir, read_summary_rows
from duplex_client.report.eval_page import (
    EvalReport,
    is_eval_dir,
    render_markdown,
    write_eval_report,
)
from duplex_client.report.eval_table import TABLE_COLUMNS
from tests.support.eval_output import BAD_ID, OK_IDS, build_eval, summary_rows

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory: pytest.TempPathFactory) -> EvalResult:
    """A finished eval: three ok items and one that failed (its clip is not media)."""
    result = build_eval(tmp_path_factory.mktemp("eval_page"))
    assert result.summary["ok"] == len(OK_IDS) and result.summary["failed"] == 1, result.notes
    return result


@pytest.fixture(scope="module")
def indexed(evaluated: EvalResult) -> tuple[EvalReport, str]:
    """The eval's index written with the real run pages; the report and the index's HTML."""
    report = write_eval_report(evaluated.output_dir)
    return report, report.index.read_text(encoding="utf-8")


@pytest.fixture
def eval_copy(evaluated: EvalResult, tmp_path: Path) -> Path:
    """A copy of the eval output (without any page written into it) a test may break."""
    pages = shutil.ignore_patterns("report.html")
    return Path(shutil.copytree(evaluated.output_dir, tmp_path / "eval", ignore=pages))


class ItemRows(HTMLParser):
    """The `<tr>`s of `table#items`: their attributes, their links and their cells' text."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[dict[str, Any]] = []
        self._in_table = self._in_body = False
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "table" and a.get("id") == "items":
            self._in_table = True
        elif self._in_table and tag == "tbody":
            self._in_body = True
        elif self._in_body and tag == "tr":
            classes = (a.get("class") or "").split()
            self.rows.append({"item": a["data-item"], "classes": classes, "hrefs": [], "cells": []})
        elif self._in_body and tag == "td":
            self._cell = []
        elif self._in_body and tag == "a":
            self.rows[-1]["hrefs"].append(a["href"])

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self._cell is not None:
            self.rows[-1]["cells"].append("".join(self._cell))
            self._cell = None
        elif tag == "table":
            self._in_table = self._in_body = False

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def item_rows(page: str) -> list[dict[str, Any]]:
    """The item table's rows as `ItemRows` reads them."""
    parser = ItemRows()
    parser.feed(page)
    return parser.rows


def eval_data(page: str) -> dict[str, Any]:
    """The page's embedded `eval-data` document."""
    match = re.search(r'<script type="application/json" id="eval-data">(.*?)</script>', page, re.S)
    assert match, "no eval-data script"
    data: dict[str, Any] = json.loads(match.group(1))
    return data


def md_counts(eval_dir: Path) -> dict[str, tuple[int, str]]:
    """summary.md's pooled table: metric label → (turns, p50 text)."""
    out = {}
    for line in (eval_dir / "summary.md").read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 5 and cells[1].isdigit():
            out[cells[0]] = (int(cells[1]), cells[2])
    return out


def test_the_embedded_table_data_is_summary_jsonl(
    evaluated: EvalResult, indexed: tuple[EvalReport, str]
) -> None:
    _, page = indexed
    data = eval_data(page)
    expected = summary_rows(evaluated.output_dir)
    assert sorted(r["id"] for r in expected) == sorted([*OK_IDS, BAD_ID])
    columns = data["columns"]
    assert {"id", "status", "timing_valid", "turns", "latency_p50_ms", "error"} <= set(columns)
    assert "speaker" in columns and "repeat" not in columns  # an extra; no repeats here
    assert data["rows"] == [{c: row.get(c) for c in columns} for row in expected]
    assert read_summary_rows(evaluated.output_dir) == expected


def test_one_table_row_per_summary_row_failed_rows_marked_and_ids_linked(
    evaluated: EvalResult, indexed: tuple[EvalReport, str]
) -> None:
    report, page = indexed
    out = evaluated.output_dir
    assert report.index == out / "report.html"
    rows = item_rows(page)
    expected = summary_rows(out)
    assert [r["item"] for r in rows] == [r["id"] for r in expected]
    for row, summary in zip(rows, expected, strict=True):
        assert ("failed" in row["classes"]) is (summary["ok"] is not True)
        assert "invalid" not in row["classes"]  # every run here was sent on time
        assert len(row["cells"]) == len(eval_data(page)["columns"])
    by_id = {r["item"]: r for r in rows}
    assert by_id[BAD_ID]["hrefs"] == []
    assert set(report.failures) == {BAD_ID}
    assert "no input_timeline.json" in report.failures[BAD_ID]
    assert "no item page" in " ".join(by_id[BAD_ID]["cells"])
    assert set(report.pages) == set(OK_IDS)
    for item_id in OK_IDS:
        (href,) = by_id[item_id]["hrefs"]
        assert "#" not in href and " " not in href  # encoded, e.g. sub/c%20%231
        target = (out / unquote(href)).resolve()
        assert target == (out / "items" / item_id / "report.html").resolve()
        assert target == report.pages[item_id].resolve()
        item_page = target.read_text(encoding="utf-8")
        assert 'id="run-data"' in item_page  # the real run page, not a stand-in


def test_the_aggregate_is_summary_md_rendered(
    evaluated: EvalResult, indexed: tuple[EvalReport, str]
) -> None:
    _, page = indexed
    section = page.split('<section class="aggregate">', 1)[1].split("</section>", 1)[0]
    assert "<h2>Eval summary</h2>" in section and "<h3>Failures</h3>" in section
    assert section.count("<table>") == 3  # pooled metrics, failures, endpoints
    assert "<td>latency</td>" in section
    assert f"Items: {len(OK_IDS) + 1} ({len(OK_IDS)} ok, 1 failed)" in section
    assert "<h1" not in section  # the page's own title is its only h1
    assert page.count("<h1>") == 1 and evaluated.output_dir.name in page.split("</h1>")[0]


def test_the_histograms_pool_what_summary_md_pools(
    evaluated: EvalResult, indexed: tuple[EvalReport, str]
) -> None:
    _, page = indexed
    pooled = eval_data(page)["pooled"]
    counts = md_counts(evaluated.output_dir)
    for name, md_label in (("latency_ms", "latency"), ("server_ms", "server time")):
        values = pooled[name]
        assert len(values) == counts[md_label][0] == 2 * len(OK_IDS)  # two answers per item
        assert f"{round(percentiles(values, [0.5])[0], 3):.1f}" == counts[md_label][1]
    assert len(pooled["overlap_ms"]) == counts["overlap"][0]
    every_turn = [
        t["latency_ms"]
        for i in OK_IDS
        for t in json.loads((evaluated.output_dir / "items" / i / "result.json").read_text())[
            "turns"
        ]
    ]
    assert sorted(pooled["latency_ms"]) == sorted(every_turn)
    for name in ("latency_ms", "server_ms", "overlap_ms"):
        assert f'<div class="histogram" id="hist-{name}">' in page
    assert "Bokeh.embed.embed_items" in page  # the figures' script went into the page


def test_missing_summary_jsonl_is_a_one_line_input_error(eval_copy: Path) -> None:
    (eval_copy / "summary.jsonl").unlink()
    assert is_eval_dir(eval_copy)  # still an eval dir by its eval.json and items/
    with pytest.raises(ReportInputError) as caught:
        check_eval_dir(eval_copy)
    message = str(caught.value)
    assert message == (
        f"{eval_copy}: no summary.jsonl (not an eval output, or the eval has not finished a "
        "summary)"
    )
    assert "\n" not in message
    with pytest.raises(ReportInputError, match=r"no summary\.jsonl"):
        write_eval_report(eval_copy)
    assert not (eval_copy / "report.html").exists()


def test_is_eval_dir_tells_an_eval_from_a_run_bundle(evaluated: EvalResult, tmp_path: Path) -> None:
    assert is_eval_dir(evaluated.output_dir)
    assert not is_eval_dir(evaluated.output_dir / "items" / "a")  # a run bundle
    assert not is_eval_dir(tmp_path)  # empty
    assert not is_eval_dir(tmp_path / "missing")


def test_a_malformed_summary_line_names_its_line(eval_copy: Path) -> None:
    with (eval_copy / "summary.jsonl").open("a", encoding="utf-8") as fh:
        fh.write("[1, 2]\n")
    n = len((eval_copy / "summary.jsonl").read_text().splitlines())
    with pytest.raises(ReportInputError, match=rf"summary.jsonl line {n}: not a summary row"):
        write_eval_report(eval_copy)


def test_unreadable_bundles_lose_their_link_not_the_index(eval_copy: Path) -> None:
    (eval_copy / "items" / "b" / "input_timeline.json").write_text("{cut", encoding="utf-8")
    shutil.rmtree(eval_copy / "items" / "a")
    report = write_eval_report(eval_copy)
    page = report.index.read_text(encoding="utf-8")
    assert set(report.failures) == {"a", "b", BAD_ID}
    assert "no such directory" in report.failures["a"]
    assert "not readable JSON" in report.failures["b"]
    by_id = {r["item"]: r for r in item_rows(page)}
    for item_id in ("a", "b"):
        assert by_id[item_id]["hrefs"] == []
        assert report.failures[item_id] in " ".join(by_id[item_id]["cells"])
    assert by_id["sub/c #1"]["hrefs"] and set(report.pages) == {"sub/c #1"}
    # a's result.json went with its bundle: its turns are left out, and the page says so
    assert len(eval_data(page)["pooled"]["latency_ms"]) == 2 * (len(OK_IDS) - 1)
    assert 'class="warning"' in page and "not in the histograms" in page


def test_timing_invalid_rows_are_marked_and_left_out_of_the_histograms(
    evaluated: EvalResult, eval_copy: Path
) -> None:
    # The same runs judged against a threshold no real send meets: every ok run is invalid.
    EvalSummary(evaluated.items, max_lateness_ms=0.001).write(eval_copy)
    report = write_eval_report(eval_copy, write_item_page=lambda bundle, out: out)
    page = report.index.read_text(encoding="utf-8")
    expected = summary_rows(eval_copy)
    assert [r["timing_valid"] for r in expected].count(False) == len(OK_IDS)
    for row, summary in zip(item_rows(page), expected, strict=True):
        assert ("invalid" in row["classes"]) is (summary["timing_valid"] is False)
    assert eval_data(page)["pooled"] == {"latency_ms": [], "server_ms": [], "overlap_ms": []}
    assert "No latency values" in page and 'class="histogram empty"' in page


def test_an_injected_item_writer_and_an_index_elsewhere(eval_copy: Path, tmp_path: Path) -> None:
    calls: list[tuple[Path, Path]] = []

    def write_page(bundle_dir: Path, output: Path) -> Path:
        calls.append((bundle_dir, output))
        if bundle_dir.name == "b":
            raise OSError("disk full")
        if bundle_dir.name == "c #1":
            raise RuntimeError("the page writer broke")
        output.write_text("<html>item</html>", encoding="utf-8")
        return output

    index = tmp_path / "site" / "index.html"
    report = write_eval_report(eval_copy, index, write_item_page=write_page)
    assert report.index == index and index.is_file()
    assert not (eval_copy / "report.html").exists()
    assert [b for b, _ in calls] == [eval_copy / "items" / r["id"] for r in summary_rows(eval_copy)]
    assert all(out == bundle / "report.html" for bundle, out in calls)
    assert report.failures == {
        "b": "disk full",
        "sub/c #1": "builtins.RuntimeError: the page writer broke",
    }
    assert set(report.pages) == {"a", BAD_ID}  # this writer writes a page for any folder
    for row in item_rows(index.read_text(encoding="utf-8")):
        for href in row["hrefs"]:
            assert href.startswith("../")
            assert (index.parent / unquote(href)).resolve() == report.pages[row["item"]].resolve()


def test_a_bundle_path_outside_the_eval_gets_no_page(eval_copy: Path, tmp_path: Path) -> None:
    rows = summary_rows(eval_copy)
    rows[0]["bundle"] = "../elsewhere"
    (eval_copy / "summary.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    report = write_eval_report(eval_copy, write_item_page=lambda bundle, out: out)
    assert "not a folder inside the eval directory" in report.failures[rows[0]["id"]]


def test_markdown_is_rendered_with_tables_and_raw_html_escaped() -> None:
    text = "# Title\n\n| a | b |\n| --- | ---: |\n| <script>x()</script> | 1 |\n\n<b>raw</b>\n"
    out = render_markdown(text)
    assert "<h2>Title</h2>" in out and "<table>" in out and '<td style="text-align:right">1' in out
    assert "<script>" not in out and "<b>" not in out
    assert "&lt;script&gt;" in out and "&lt;b&gt;raw&lt;/b&gt;" in out


def test_table_columns_follow_the_summary_order(indexed: tuple[EvalReport, str]) -> None:
    columns = eval_data(indexed[1])["columns"]
    fixed = [c for c in columns if c in TABLE_COLUMNS]
    assert fixed == [c for c in TABLE_COLUMNS if c in fixed]
    assert columns[-1] == "speaker"
