"""The pages in a real headless Chromium (Debian's, via Playwright), loaded from file://.

What Bokeh drew is read from its live views; waits are Playwright's (no sleeps).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from duplex_client.report.compare_page import write_compare_report
from duplex_client.report.run_page import write_run_report
from tests.support.browser import chromium, open_page, pixel_stddev


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as b:
        yield b


@pytest.fixture(scope="module")
def run_page(runs: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_run_report(runs[0], tmp_path_factory.mktemp("pages") / "a.html")


def test_the_run_page_draws_every_track(
    browser: Any, run_page: Path, runs: tuple[Path, Path]
) -> None:
    result = json.loads((runs[0] / "result.json").read_text(encoding="utf-8"))
    timeline = json.loads((runs[0] / "input_timeline.json").read_text(encoding="utf-8"))
    closing = [a for a in timeline["appends"] if a["unit_kind"] is not None]
    with open_page(browser, run_page) as loaded:
        drawn = loaded.rendered()
        assert all(glyph["finished"] for glyph in drawn.values())
        assert drawn["units"]["size"] == len(closing)
        assert drawn["frames"]["size"] == sum(len(a["frames"]) for a in closing)
        assert drawn["decisions"]["size"] == len(result["decisions"])
        assert drawn["responses"]["size"] == len(result["turns"])
        assert drawn["latency"]["size"] == sum(1 for t in result["turns"] if t["latency_ms"])
        assert drawn["lateness"]["size"] == len(timeline["appends"])
        assert drawn["input_wave"]["size"] > 100 and drawn["heard_wave"]["size"] > 100
        assert loaded.page.locator("#turns tbody tr.turn").count() == len(result["turns"])
        assert loaded.errors == []


def test_clicking_a_turn_highlights_its_span_on_every_track(
    browser: Any, run_page: Path, runs: tuple[Path, Path]
) -> None:
    turn = json.loads((runs[0] / "result.json").read_text(encoding="utf-8"))["turns"][1]
    with open_page(browser, run_page) as loaded:
        page = loaded.page
        page.locator("#turns tr.turn").nth(1).click()
        boxes = page.evaluate("""() => {
          const out = [];
          Bokeh.documents[0].all_models.forEach(m => {
            if (m.name === "highlight") out.push([m.visible, m.left, m.right]);
          });
          return out;
        }""")
        assert len(boxes) == 8  # one box per track (the run has thumbnails)
        assert all(b == [True, turn["user_end_ms"], turn["heard_end_ms"]] for b in boxes)
        assert "selected" in (page.locator("#turns tr.turn").nth(1).get_attribute("class") or "")
        assert loaded.errors == []


def test_the_page_is_not_blank(browser: Any, run_page: Path) -> None:
    with open_page(browser, run_page) as loaded:
        shot = loaded.page.screenshot(full_page=True)
    assert pixel_stddev(shot) > 20


def test_the_comparison_page_marks_the_differences(
    browser: Any, runs: tuple[Path, Path], tmp_path: Path
) -> None:
    page_path = write_compare_report(*runs, tmp_path / "c.html")
    with open_page(browser, page_path) as loaded:
        drawn = loaded.rendered()
        assert {"A · units", "B · units", "A · responses", "B · responses"} <= set(drawn)
        rows = loaded.page.locator("#differences tr.diff")
        assert rows.count() == 5
        latency = loaded.page.locator('#differences tr[data-kind="latency"]')
        latency.click()
        start = float(latency.get_attribute("data-start") or "nan")
        highlighted = loaded.page.evaluate("document.body.dataset.highlight")
        assert float(highlighted.split(",")[0]) == start
        # The units decided differently are outlined in red in both runs.
        outlines = loaded.page.evaluate("""() => {
          const out = {};
          Bokeh.documents[0].all_models.forEach(m => {
            if (m.name === "A · units" || m.name === "B · units") {
              const d = m.data_source.data;
              out[m.name] = Array.from(d.index).filter((_, i) => d.line_width[i] > 1);
            }
          });
          return out;
        }""")
        assert outlines == {"A · units": [2, 3], "B · units": [2, 3]}
        assert loaded.errors == []


def test_the_player_moves_the_playhead_on_every_track(browser: Any, run_page: Path) -> None:
    with open_page(browser, run_page) as loaded:
        page = loaded.page
        page.wait_for_function("() => document.getElementById('player').readyState >= 1")
        duration = page.evaluate("document.getElementById('player').duration")
        assert duration > 4.0  # the 4.5 s run's conversation mix, decoded by the browser
        page.evaluate("document.getElementById('player').currentTime = 1.5")
        page.wait_for_function("() => document.body.dataset.playhead !== undefined")
        lines = page.evaluate("""() => {
          const out = [];
          Bokeh.documents[0].all_models.forEach(m => {
            if (m.name === "playhead") out.push(m.location);
          });
          return out;
        }""")
        assert len(lines) == 8 and all(abs(x - 1500.0) < 1.0 for x in lines), lines
        assert loaded.errors == []
