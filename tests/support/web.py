"""`duplex-cli web` under test: its servers on a background loop, Chromium with fake devices.

The page is driven by a real headless Chromium (Debian's, through Playwright's sync API, as
the report tests do) whose fake microphone plays a WAV the test made and whose fake camera
plays a Y4M file; the web app and the model's server run on an event loop in a background
thread, so the test's thread can drive the browser.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from tests.support.browser import ARGS, CHROMIUM, need_chromium

T = TypeVar("T")
STATES = ("idle", "connecting", "live", "stopped", "error")


class LoopThread:
    """An asyncio loop in a daemon thread; `run(coro)` waits for a coroutine run there."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()

    def run(self, coro: Awaitable[T], timeout: float = 60.0) -> T:
        """Run `coro` on the loop and return its result."""
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)  # type: ignore[arg-type]
        return future.result(timeout)

    def close(self) -> None:
        """Stop the loop and its thread."""
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)
        self.loop.close()


@dataclass
class Served:
    """A web app on the loop thread, and the terminal lines it said."""

    app: Any
    lines: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        """The page's URL with the token."""
        return str(self.app.page_url)


@contextmanager
def serving(loop: LoopThread, url: str | None, **config: Any) -> Iterator[Served]:
    """A `WebApp` for `url` (config: `WebConfig` fields) started on `loop`, stopped after."""
    from duplex_client.web import WebApp, WebConfig

    served = Served(None)
    served.app = WebApp(WebConfig(url=url, **config), say=served.lines.append)
    loop.run(served.app.start())
    try:
        yield served
    finally:
        loop.run(served.app.stop(), timeout=90)


def fake_device_args(wav: Path, y4m: Path | None = None, *, fake_ui: bool = True) -> list[str]:
    """Chromium's fake microphone (the WAV, looped) and camera (the Y4M, or its test pattern)."""
    args = [*ARGS, "--use-fake-device-for-media-stream", f"--use-file-for-fake-audio-capture={wav}"]
    if y4m is not None:
        args.append(f"--use-file-for-fake-video-capture={y4m}")
    if fake_ui:
        args.append("--use-fake-ui-for-media-stream")  # grants every device request
    else:
        args.append("--deny-permission-prompts")  # only granted contexts get devices
    return [*args, "--autoplay-policy=no-user-gesture-required"]


@contextmanager
def chromium_with(args: list[str]) -> Iterator[Any]:
    """A headless Chromium launched with `args` (one per test module)."""
    need_chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=args)
        try:
            yield browser
        finally:
            browser.close()


@dataclass
class WebPage:
    """An open page of the app and the page errors it logged."""

    page: Any
    errors: list[str] = field(default_factory=list)

    def status(self) -> str:
        """The `#status` text."""
        return str(self.page.text_content("#status"))

    def wait_status(self, *states: str, timeout_s: float = 30.0) -> str:
        """Wait until `#status` is one of `states`; returns it."""
        self.page.wait_for_function(
            "states => states.includes(document.getElementById('status').textContent)",
            arg=list(states),
            timeout=timeout_s * 1000,
        )
        return self.status()

    def wait(self, js: str, timeout_s: float = 30.0, arg: Any = None) -> Any:
        """Wait until the JavaScript predicate `js` (a function of `arg`) is truthy."""
        return self.page.wait_for_function(js, arg=arg, timeout=timeout_s * 1000).json_value()

    def stats(self) -> dict[str, Any]:
        """What the page counted: samples sent, played samples per response, clears."""
        out: dict[str, Any] = self.page.evaluate("() => window.duplexPage.stats")
        return out

    def start(self, *, mode: str | None = None, echo: bool = True, wait: bool = True) -> None:
        """Choose the mode and the echo settings, press Start (and wait until live)."""
        self.page.wait_for_selector("#start:not([disabled])")
        if mode is not None:
            self.page.check(f"#mode-{mode}")
        for name in ("echoCancellation", "noiseSuppression", "autoGainControl"):
            self.page.set_checked(f"#{name}", echo)
        self.page.click("#start")
        if wait:
            self.wait_status("live")

    def stop(self, timeout_s: float = 60.0) -> str:
        """Press Stop and wait for the session's end; returns the final status."""
        self.page.click("#stop")
        return self.wait_status("stopped", "error", timeout_s=timeout_s)


@contextmanager
def open_web(browser: Any, url: str, **context: Any) -> Iterator[WebPage]:
    """The app's page in a fresh context (`context`: Playwright's options), closed after.

    The page's Content-Security-Policy is bypassed unless `bypass_csp=False`: Playwright's
    waits evaluate strings, which the policy forbids.
    """
    context.setdefault("bypass_csp", True)
    ctx = browser.new_context(**context)
    page = ctx.new_page()
    loaded = WebPage(page)
    page.on("pageerror", lambda e: loaded.errors.append(str(e)))
    page.on("console", lambda m: loaded.errors.append(m.text) if m.type == "error" else None)
    try:
        page.goto(url)
        yield loaded
    finally:
        ctx.close()


def write_y4m(path: Path, frames: list[Any], fps: int = 10) -> Path:
    """BGR frames (all one size, even sides) as a YUV 4:2:0 Y4M file Chromium plays as a camera."""
    import cv2

    h, w = frames[0].shape[:2]
    with path.open("wb") as f:
        f.write(f"YUV4MPEG2 W{w} H{h} F{fps}:1 Ip A1:1 C420jpeg\n".encode())
        for bgr in frames:
            f.write(b"FRAME\n")
            f.write(cv2.cvtColor(bgr, cv2.COLOR_BGR2YUV_I420).tobytes())
    return path


def aligned_correlation(got: Any, ref: Any) -> tuple[float, int]:
    """The correlation of `got` with the looped `ref` at the best alignment, and that offset.

    `got` is a window of `ref` played in a loop from an unknown point (Chromium's fake
    microphone loops its file): the offset is found by FFT cross-correlation against two
    loops of `ref`, then the normalised correlation is computed over the aligned window.
    """
    x = np.asarray(got, dtype=np.float64)
    y = np.asarray(ref, dtype=np.float64)
    loops = np.tile(y, int(np.ceil(len(x) / len(y))) + 1)
    n = 1 << int(np.ceil(np.log2(len(loops) + len(x))))
    spectrum = np.fft.rfft(loops, n) * np.conj(np.fft.rfft(x, n))
    scores = np.fft.irfft(spectrum, n)[: len(y)]
    offset = int(np.argmax(scores))
    window = loops[offset : offset + len(x)]
    denom = float(np.linalg.norm(window) * np.linalg.norm(x))
    return (float(np.dot(window, x)) / denom if denom else 0.0), offset


def blockwise_correlation(got: Any, ref: Any, block: int) -> list[float]:
    """`aligned_correlation` of each audible `block`-sample piece of `got`, aligned on its own.

    A piece's offset is found afresh, so a glitch of the capture (a loaded machine's fake
    microphone skips ahead) costs the one piece it falls in, while a wrong rate, byte order or
    channel mix spoils every piece. Pieces quieter than a twentieth of `ref`'s RMS are left out.
    """
    x = np.asarray(got, dtype=np.float64)
    floor = 0.05 * float(np.sqrt(np.mean(np.square(np.asarray(ref, dtype=np.float64)))))
    pieces = (x[i : i + block] for i in range(0, len(x) - block + 1, block))
    return [
        aligned_correlation(piece, ref)[0]
        for piece in pieces
        if float(np.sqrt(np.mean(np.square(piece)))) >= floor
    ]


def wait_until(pred: Callable[[], object], timeout_s: float = 20.0, what: str = "") -> None:
    """Poll `pred` (every 50 ms) until it is true (bounded)."""
    import time

    deadline = time.monotonic() + timeout_s
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or pred}")
        time.sleep(0.05)
