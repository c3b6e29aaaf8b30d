"""Report cost at length: a 10-minute run's page and PNG against a 60 s run's, same run.

Two synthetic bundles (`benchmarks._report_bundle`: 200 ms appends, 1 s OMNI units each with
one 160x120 thumbnail, a decision per unit, an answer of about 2 s every 8 units, 24 kHz
conversation audio) of 60 s and 600 s of media. For each:

- **build**: `write_run_report(bundle, page)` wall time (median of 3), and once its parts:
  reading the bundle (`load_run_bundle`), the Opus encode of the inlined player audio, and the
  rest (the Bokeh document, the HTML, the write);
- **page**: its size in MB (10^6 bytes) with what takes it (BokehJS, the audio, the
  thumbnails, the rest), and the thumbnails it embeds;
- **render**: headless Chromium (`tests/support/browser.py`'s binary and flags), from
  `page.goto(file://)` until every Bokeh view has finished rendering (median of 3, a new tab
  each time, the browser already running);
- **PNG**: `run_figure` + `save_png` on the bundle already read (median of 3).

The baseline is the 60 s run: the 600 s / 60 s ratio of each figure says how it scales
(10× is linear). Targets: the 60 s page < 5 MB; the 600 s page built in ≤ 10 s and rendered
in ≤ 5 s. Run: `python -m benchmarks.bench_report` (`--quick` or `BENCH_QUICK=1`: 6 s and
30 s, one repetition: a smoke run).
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks._common import machine, quick_mode, table
from benchmarks._report_bundle import write_bundle

LENGTHS_S = (60, 600)
QUICK_LENGTHS_S = (6, 30)
REPEATS = 3
TARGET_PAGE_MB = 5.0
TARGET_BUILD_S = 10.0
TARGET_RENDER_S = 5.0
RENDER_TIMEOUT_MS = 120_000
THUMB_PREFIX = "data:image/jpeg;base64,"
AUDIO_PREFIX = "data:audio/ogg;base64,"
NAV_DCL_JS = "() => performance.getEntriesByType('navigation')[0].domContentLoadedEventEnd"


def _median_s(fn: Callable[[], Any], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _data_url_chars(text: str, prefix: str) -> tuple[int, int]:
    """(how many data URLs start with `prefix`, their total length in characters)."""
    count = chars = 0
    start = text.find(prefix)
    while start >= 0:
        end = start + len(prefix)
        while end < len(text) and text[end] not in "\"'":
            end += 1
        count, chars = count + 1, chars + end - start
        start = text.find(prefix, end)
    return count, chars


def measure_build(bundle: Path, page: Path, repeats: int) -> dict[str, Any]:
    """Page build time, its parts, and what the page holds."""
    from duplex_client.report.bundle_reader import encode_listening_audio, load_run_bundle
    from duplex_client.report.html import bokeh_script
    from duplex_client.report.run_page import write_run_report

    bokeh_chars = len(bokeh_script())  # cached after the first call: not part of a build
    build_s = _median_s(lambda: write_run_report(bundle, page), repeats)
    t0 = time.perf_counter()
    data = load_run_bundle(bundle)
    read_s = time.perf_counter() - t0
    mix = data.conversation
    assert mix is not None
    opus_s = _median_s(lambda: encode_listening_audio(mix), 1)
    text = page.read_text(encoding="utf-8")
    thumbs, thumb_chars = _data_url_chars(text, THUMB_PREFIX)
    _, audio_chars = _data_url_chars(text, AUDIO_PREFIX)
    size = page.stat().st_size
    return {
        "build_s": build_s,
        "read_s": read_s,
        "opus_s": opus_s,
        "rest_s": max(0.0, build_s - read_s - opus_s),
        "page_mb": size / 1e6,
        "bokeh_mb": bokeh_chars / 1e6,
        "audio_mb": audio_chars / 1e6,
        "thumbs_mb": thumb_chars / 1e6,
        "other_mb": (size - bokeh_chars - audio_chars - thumb_chars) / 1e6,
        "thumbnails": thumbs,
        "units": len(data.view.units),
    }


def measure_png(bundle: Path, out: Path, repeats: int) -> float:
    """`run_figure` + `save_png` seconds (median), the bundle read once beforehand."""
    from duplex_client.report.bundle_reader import load_run_bundle
    from duplex_client.report.figure import run_figure, save_png

    data = load_run_bundle(bundle)
    return _median_s(lambda: save_png(run_figure(data), out), repeats)


def measure_render(browser: Any, page: Path, repeats: int) -> dict[str, Any]:
    """Seconds from `goto` until every Bokeh view has rendered, and to DOMContentLoaded.

    Medians over `repeats` fresh tabs, with the fastest and slowest render; DOMContentLoaded
    (the HTML parsed and its inline scripts run) is the page's own navigation timing. Also
    how many thumbnails the live `frames` renderer drew, and the page errors.
    """
    from tests.support.browser import READY_JS, RENDERED_JS

    parsed, readies, errors, drawn = [], [], 0, 0
    for _ in range(repeats):
        tab = browser.new_page(viewport={"width": 1400, "height": 1000})
        seen: list[str] = []
        tab.on("pageerror", lambda e, seen=seen: seen.append(str(e)))
        try:
            t0 = time.perf_counter()
            tab.goto(page.resolve().as_uri(), timeout=RENDER_TIMEOUT_MS)
            tab.wait_for_function(READY_JS, timeout=RENDER_TIMEOUT_MS)
            readies.append(time.perf_counter() - t0)
            parsed.append(tab.evaluate(NAV_DCL_JS) / 1000)
            drawn = tab.evaluate(RENDERED_JS).get("frames", {}).get("size", 0)
        finally:
            tab.close()
        errors += len(seen)
    return {
        "dcl_s": statistics.median(parsed),
        "render_s": statistics.median(readies),
        "render_range": f"{min(readies):.2f}–{max(readies):.2f}",
        "page_errors": errors,
        "frames_drawn": drawn,
    }


def _browser_runs(pages: list[Path], repeats: int) -> list[dict[str, Any]]:
    from playwright.sync_api import sync_playwright

    from tests.support.browser import ARGS, CHROMIUM

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            measure_render(browser, pages[0], 1)  # warm-up: the first tab pays start-up costs
            return [measure_render(browser, page, repeats) for page in pages]
        finally:
            browser.close()


def _warm_up(bundle: Path, root: Path) -> None:
    """One untimed page and PNG, so imports and caches are not charged to the first run."""
    from duplex_client.report.run_page import write_run_report

    write_run_report(bundle, root / "warm_up.html")
    measure_png(bundle, root / "warm_up.png", 1)


def _verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


def main() -> None:
    """Build, size, render and plot both bundles; print the table, ratios and verdicts."""
    quick = quick_mode()
    lengths, repeats = (QUICK_LENGTHS_S, 1) if quick else (LENGTHS_S, REPEATS)
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"machine: {machine()}, load average {load}{' (quick run)' if quick else ''}")
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-report-") as tmp:
        root = Path(tmp)
        bundles = {seconds: write_bundle(root / f"run_{seconds}s", seconds) for seconds in lengths}
        _warm_up(bundles[lengths[0]], root)
        pages = []
        for seconds, bundle in bundles.items():
            page = root / f"run_{seconds}s.html"
            r = {"seconds": seconds, **measure_build(bundle, page, repeats)}
            r["png_s"] = measure_png(bundle, root / f"run_{seconds}s.png", repeats)
            print(f"  {seconds} s: build {r['build_s']:.2f} s, page {r['page_mb']:.2f} MB,"
                  f" PNG {r['png_s']:.2f} s", flush=True)  # fmt: skip
            rows.append(r)
            pages.append(page)
        for r, rendered in zip(rows, _browser_runs(pages, repeats), strict=True):
            r.update(rendered)
    _print(rows, repeats)


#: (key, label, format) of each row of the main table.
FIGURES = [
    ("build_s", "page build: write_run_report (s)", "{:.2f}"),
    ("page_mb", "page size (MB)", "{:.2f}"),
    ("thumbnails", "thumbnails embedded", "{}"),
    ("dcl_s", "Chromium: HTML parsed, DOMContentLoaded (s)", "{:.2f}"),
    ("render_s", "Chromium: goto → every view rendered (s)", "{:.2f}"),
    ("png_s", "PNG: run_figure + save_png (s)", "{:.2f}"),
]
#: (key, header, format) of each column of the breakdown table.
PARTS = [
    ("read_s", "build: read bundle (s)", "{:.2f}"),
    ("opus_s", "Opus encode (s)", "{:.2f}"),
    ("rest_s", "Bokeh + HTML + write (s)", "{:.2f}"),
    ("bokeh_mb", "BokehJS (MB)", "{:.2f}"),
    ("audio_mb", "audio (MB)", "{:.2f}"),
    ("thumbs_mb", "thumbnails (MB)", "{:.2f}"),
    ("other_mb", "data + markup (MB)", "{:.2f}"),
    ("render_range", "render fastest–slowest (s)", "{}"),
    ("frames_drawn", "thumbnails drawn", "{}"),
    ("page_errors", "page errors", "{}"),
]


def _print(rows: list[dict[str, Any]], repeats: int) -> None:
    base, big = rows[0], rows[-1]
    headers = ["figure", *(f"{r['seconds']} s run" for r in rows)]
    headers.append(f"{big['seconds']} s / {base['seconds']} s")
    body = [
        [label, *(fmt.format(r[k]) for r in rows), f"{big[k] / base[k]:.1f}×"]
        for k, label, fmt in FIGURES
    ]
    print(
        f"medians of {repeats}; the baseline is the {base['seconds']} s run "
        f"(linear scaling would be {big['seconds'] / base['seconds']:.0f}×)"
    )
    print(table(headers, body))
    print()
    parts = [[f"{r['seconds']} s", *(fmt.format(r[k]) for k, _, fmt in PARTS)] for r in rows]
    print(table(["run", *(h for _, h, _ in PARTS)], parts))
    checks = [
        (f"{base['seconds']} s page < {TARGET_PAGE_MB:g} MB", base["page_mb"] < TARGET_PAGE_MB),
        (f"{big['seconds']} s build <= {TARGET_BUILD_S:g} s", big["build_s"] <= TARGET_BUILD_S),
        (f"{big['seconds']} s render <= {TARGET_RENDER_S:g} s", big["render_s"] <= TARGET_RENDER_S),
    ]
    print("targets: " + "; ".join(f"{name}: {_verdict(ok)}" for name, ok in checks))


if __name__ == "__main__":
    main()
