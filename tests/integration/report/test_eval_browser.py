"""The eval index page in headless Chromium, from `file://`: table, sorting, links, histograms."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, ConsoleMessage, Page

from duplex_client.report.eval_page import EvalReport, write_eval_report
from tests.support.browser import chromium
from tests.support.eval_output import BAD_ID, OK_IDS, build_eval, summary_rows

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> EvalReport:
    """A real eval (three ok items, one failed) and its index with the real run pages."""
    result = build_eval(tmp_path_factory.mktemp("eval_browser"))
    return write_eval_report(result.output_dir)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Debian's Chromium, headless (see tests/support/browser.py)."""
    with chromium() as b:
        yield b


class Opened:
    """A page loaded from `file://`, with every console error, page error and request seen."""

    def __init__(self, browser: Browser, path: Path) -> None:
        self.page: Page = browser.new_page()
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.page.on("console", self._console)
        self.page.on("pageerror", lambda exc: self.errors.append(f"pageerror: {exc}"))
        self.page.on("request", lambda request: self.requests.append(request.url))
        self.page.goto(path.as_uri())

    def _console(self, message: ConsoleMessage) -> None:
        if message.type == "error":
            self.errors.append(f"console {message.type}: {message.text}")

    def wait_for_bokeh(self) -> None:
        """Until Bokeh has a document and the latency histogram drew its canvas."""
        self.page.wait_for_function("() => window.Bokeh && Bokeh.documents.length > 0")
        self.page.locator("#hist-latency_ms canvas").first.wait_for(state="visible")

    def column(self, name: str) -> list[str | None]:
        """Each body row's `data-value` in column `name`, top to bottom."""
        values: list[str | None] = self.page.evaluate(
            """(name) => {
              const heads = Array.from(document.querySelectorAll("#items thead th"));
              const col = heads.findIndex((th) => th.dataset.column === name);
              return Array.from(document.querySelectorAll("#items tbody tr"))
                .map((tr) => tr.cells[col].getAttribute("data-value"));
            }""",
            name,
        )
        return values

    def close(self) -> None:
        """Close the tab."""
        self.page.close()


@pytest.fixture
def index(browser: Browser, report: EvalReport) -> Iterator[Opened]:
    """The index page, open; asserts at the end that nothing errored and nothing left disk."""
    opened = Opened(browser, report.index)
    yield opened
    opened.close()
    assert opened.errors == []
    assert all(url.startswith(("file://", "data:", "blob:")) for url in opened.requests), (
        opened.requests
    )


def test_one_row_per_summary_row_with_failed_rows_marked(index: Opened, report: EvalReport) -> None:
    index.wait_for_bokeh()
    expected = summary_rows(report.index.parent)
    rows = index.page.locator("#items tbody tr")
    assert rows.count() == len(expected) == len(OK_IDS) + 1
    items = [rows.nth(i).get_attribute("data-item") for i in range(rows.count())]
    assert items == [r["id"] for r in expected]
    failed = index.page.locator("#items tbody tr.failed")
    assert failed.count() == 1 and failed.get_attribute("data-item") == BAD_ID
    assert index.page.locator("#items tbody tr.invalid").count() == 0
    data: dict[str, Any] = index.page.evaluate(
        "() => JSON.parse(document.getElementById('eval-data').textContent)"
    )
    assert [r["id"] for r in data["rows"]] == items


def test_clicking_a_numeric_header_sorts_the_rows(index: Opened) -> None:
    index.wait_for_bokeh()
    head = index.page.locator('#items th[data-column="latency_p50_ms"]')
    items = index.page.locator("#items tbody tr")

    head.click()
    assert head.get_attribute("aria-sort") == "ascending"
    values = index.column("latency_p50_ms")
    numbers = [float(v) for v in values[: len(OK_IDS)] if v]
    assert len(numbers) == len(OK_IDS) and numbers == sorted(numbers)
    assert numbers[-1] >= 1000 > numbers[0]  # as text, "1…" would come before "4…"
    assert values[-1] == "" and items.last.get_attribute("data-item") == BAD_ID  # null last

    head.click()
    assert head.get_attribute("aria-sort") == "descending"
    values = index.column("latency_p50_ms")
    assert [float(v) for v in values[: len(OK_IDS)] if v] == sorted(numbers, reverse=True)
    assert items.last.get_attribute("data-item") == BAD_ID  # still last

    index.page.locator('#items th[data-column="id"]').click()
    assert index.column("id") == sorted([*OK_IDS, BAD_ID])


def test_every_link_opens_an_existing_item_page(
    index: Opened, report: EvalReport, browser: Browser
) -> None:
    links = index.page.locator("#items tbody tr a")
    assert links.count() == len(OK_IDS)
    urls = links.evaluate_all("(links) => links.map((a) => a.href)")
    pages = {p.resolve().as_uri() for p in report.pages.values()}
    assert set(urls) == pages
    assert index.page.locator(f'#items tbody tr[data-item="{BAD_ID}"] a').count() == 0
    assert "no item page" in index.page.locator(f'#items tr[data-item="{BAD_ID}"]').inner_text()

    link = index.page.locator('#items tr[data-item="sub/c #1"] a')
    link.click()
    index.page.wait_for_url(report.pages["sub/c #1"].resolve().as_uri())
    index.page.locator("#run-data").wait_for(state="attached")
    assert "c #1" in index.page.title()


def test_the_histograms_render_in_canvas(index: Opened) -> None:
    index.wait_for_bokeh()
    for name in ("latency_ms", "server_ms", "overlap_ms"):
        canvas = index.page.locator(f"#hist-{name} canvas").first
        canvas.wait_for(state="visible")
        box = canvas.bounding_box()
        assert box is not None and box["width"] > 100 and box["height"] > 100
    roots = index.page.evaluate(
        "() => Bokeh.documents[0].roots().map((r) => r.name).filter((n) => n)"
    )
    assert sorted(roots) == ["hist-latency_ms", "hist-overlap_ms", "hist-server_ms"]
