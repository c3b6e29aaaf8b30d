"""Headless Chromium (Debian's, driven by Playwright) for the report page tests.

`open_page` loads a file:// page, waits until Bokeh has rendered every view, and collects
console errors and uncaught page errors; `rendered_glyphs` reads, from the live Bokeh views,
how many items each named glyph renderer drew.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
#: As root on a closed network: no sandbox, no GPU, no background connections.
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

RENDERED_JS = """() => {
  const found = {};
  const seen = new Set();
  function walk(v) {
    if (!v || seen.has(v)) return;
    seen.add(v);
    if (v.model && v.model.name && v.glyph) {
      found[v.model.name] = {size: v.glyph.data_size, finished: v.has_finished()};
    }
    for (const c of (v.child_views || [])) walk(c);
    if (v.renderer_views) for (const c of v.renderer_views.values()) walk(c);
  }
  Object.values(Bokeh.index).forEach(walk);
  return found;
}"""

READY_JS = """() => window.Bokeh && Bokeh.documents.length > 0
  && Object.keys(Bokeh.index).length > 0
  && Object.values(Bokeh.index).every(v => v.has_finished())"""


def need_chromium() -> None:
    """Skip when the machine has no Chromium; under CI (which installs it), fail instead."""
    if not Path(CHROMIUM).exists():
        message = "no chromium: apt-get install chromium (as .ci/run does)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)


@dataclass
class LoadedPage:
    """A loaded page and every console error or page error it produced."""

    page: Any
    errors: list[str] = field(default_factory=list)

    def rendered(self) -> dict[str, dict[str, Any]]:
        """Named glyph renderer → {size: items drawn, finished: bool}, from the live views."""
        out: dict[str, dict[str, Any]] = self.page.evaluate(RENDERED_JS)
        return out


@contextmanager
def chromium() -> Iterator[Any]:
    """A headless Chromium browser for one test module."""
    need_chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            yield browser
        finally:
            browser.close()


@contextmanager
def open_page(browser: Any, path: Path, *, width: int = 1400) -> Iterator[LoadedPage]:
    """`path` loaded from file:// and rendered; closed afterwards."""
    page = browser.new_page(viewport={"width": width, "height": 1000})
    loaded = LoadedPage(page)
    page.on("console", lambda m: loaded.errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: loaded.errors.append(str(e)))
    try:
        page.goto(path.resolve().as_uri())
        page.wait_for_function(READY_JS)
        yield loaded
    finally:
        page.close()


def pixel_stddev(png: bytes) -> float:
    """The standard deviation of a screenshot's grey levels (0 for a blank page)."""
    import cv2
    import numpy as np

    image = cv2.imdecode(np.frombuffer(png, np.uint8), cv2.IMREAD_GRAYSCALE)
    return float(image.std())
