"""Bad input and safety from the page: permissions, devices, a second tab, a failing
endpoint, the socket's origin and token checks, and secrets that never reach the page.

Chromium runs without its fake permission prompt here (`--deny-permission-prompts`): a
context is given the microphone and camera explicitly, or refused them.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import websockets

from duplex_client.run.options import RunOptions
from duplex_client.server import Script
from duplex_client.server.faults import Faults
from tests.integration.web.conftest import reference
from tests.support.web import (
    LoopThread,
    Served,
    chromium_with,
    fake_device_args,
    open_web,
    serving,
)

GRANTED = {"permissions": ["microphone", "camera"]}
SECRET = "sk-web-test-5ecret-never-on-the-page"


@pytest.fixture(scope="module")
def browser(fake_files: tuple[Path, Any, Path]) -> Iterator[Any]:
    wav, _, y4m = fake_files
    with chromium_with(fake_device_args(wav, y4m, fake_ui=False)) as b:
        yield b


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def rebound(port: int) -> int:
    """The status of a page request naming another host (as a DNS-rebinding page's would)."""
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    conn.request("GET", "/", headers={"Host": f"evil.example:{port}"})
    try:
        return conn.getresponse().status
    finally:
        conn.close()


def said(web: Served, text: str) -> bool:
    return any(text in line for line in web.lines)


def test_permission_denied_is_said_and_nothing_is_written(
    browser: Any, loop: LoopThread, tmp_path: Path
) -> None:
    with (
        serving(loop, "ws://127.0.0.1:9", output_dir=tmp_path) as web,
        open_web(browser, web.url) as page,
    ):
        page.start(wait=False)
        assert page.wait_status("error") == "error"
        assert "permission denied" in page.page.text_content("#message")
        page.page.wait_for_timeout(200)
        assert said(web, "page: permission denied")
    assert not web.app.bundles and not any(tmp_path.iterdir())


def test_a_missing_device_is_said(browser: Any, loop: LoopThread, tmp_path: Path) -> None:
    with (
        serving(loop, "ws://127.0.0.1:9", output_dir=tmp_path) as web,
        open_web(browser, web.url, **GRANTED) as page,
    ):
        page.page.wait_for_selector("#start:not([disabled])")
        assert page.page.is_hidden("#headphones")
        page.page.uncheck("#echoCancellation")  # the page says to use headphones
        assert page.page.is_visible("#headphones")
        page.page.evaluate(
            "() => { const s = document.getElementById('mic-select');"
            " s.add(new Option('gone', 'no-such-device')); s.value = 'no-such-device'; }"
        )
        page.start(wait=False)
        assert page.wait_status("error") == "error"
        assert "no such device" in page.page.text_content("#message")
    assert said(web, "page: no such device") and not web.app.bundles


def test_an_unplugged_microphone_ends_the_session_and_the_bundle_keeps_what_came(
    browser: Any, loop: LoopThread, tmp_path: Path
) -> None:
    with (
        reference(loop, profile="minicpmo", engine="scripted") as server,
        serving(loop, server.url, output_dir=tmp_path) as web,
        open_web(browser, web.url, **GRANTED) as page,
    ):
        page.start()
        page.page.wait_for_timeout(1500)
        page.page.evaluate(
            "() => window.duplexPage.stream.getAudioTracks()[0].dispatchEvent(new Event('ended'))"
        )
        assert page.wait_status("error") == "error"
        assert "microphone" in page.page.text_content("#message")
        bundle = web.app.bundles[1]
    assert said(web, "the page's microphone stopped") and said(web, f"bundle: {bundle}")
    result = json.loads((bundle / "result.json").read_text())
    assert not result["ok"] and "microphone stopped" in result["error"]
    assert json.loads((bundle / "input_timeline.json").read_text())["appends"]


def test_a_second_tab_is_told_and_the_first_keeps_the_session(
    browser: Any, loop: LoopThread
) -> None:
    with serving(loop, "ws://127.0.0.1:9") as web, open_web(browser, web.url, **GRANTED) as first:
        first.wait_status("idle")
        with open_web(browser, web.url, **GRANTED) as second:
            assert second.wait_status("error") == "error"
            assert "another tab" in second.page.text_content("#message")
        assert first.status() == "idle" and not first.page.is_disabled("#start")
    assert said(web, "refused a second tab")


def test_an_endpoint_that_refuses_is_said_and_recorded(
    browser: Any, loop: LoopThread, tmp_path: Path
) -> None:
    url = f"ws://127.0.0.1:{free_port()}"
    with (
        serving(loop, url, output_dir=tmp_path) as web,
        open_web(browser, web.url, **GRANTED) as page,
    ):
        page.start(wait=False)
        assert page.wait_status("error") == "error"
        assert "cannot connect" in page.page.text_content("#message")
        bundle = web.app.bundles[1]
    assert said(web, "session 1: error") and said(web, "cannot connect")
    assert "cannot connect" in json.loads((bundle / "result.json").read_text())["error"]


def test_an_endpoint_that_drops_is_said_and_the_bundle_keeps_what_came(
    browser: Any, loop: LoopThread, tmp_path: Path
) -> None:
    options = RunOptions(reconnect=False)
    faults = Faults(drop_after_events=4)  # about two units in (one listen a unit)
    with (
        reference(loop, profile="minicpmo", engine="scripted", faults=faults) as server,
        serving(loop, server.url, options=options, output_dir=tmp_path) as web,
        open_web(browser, web.url, **GRANTED) as page,
    ):
        page.start(wait=False)
        assert page.wait_status("error", timeout_s=30) == "error"
        assert "disconnect" in page.page.text_content("#message")
        bundle = web.app.bundles[1]
    result = json.loads((bundle / "result.json").read_text())
    assert not result["ok"] and "disconnect" in result["error"]
    assert json.loads((bundle / "input_timeline.json").read_text())["appends"]


def test_the_socket_takes_only_the_page_origin_and_the_token(
    browser: Any, loop: LoopThread
) -> None:
    with serving(loop, "ws://127.0.0.1:9") as web, serving(loop, "ws://127.0.0.1:9") as other:
        ws_url = f"ws://127.0.0.1:{web.app.port}/ws?token={web.app.token}"
        origin = web.app.origin

        async def status(url: str, origin: str | None) -> int:
            try:
                async with websockets.connect(url, origin=origin, proxy=None) as ws:  # type: ignore[arg-type]
                    return 101 if json.loads(await ws.recv())["type"] == "ready" else 0
            except websockets.InvalidStatus as exc:
                return exc.response.status_code

        wrong_token = ws_url.replace(web.app.token, "guessed")
        assert loop.run(status(ws_url, "http://evil.example")) == 403
        assert loop.run(status(ws_url, other.app.origin)) == 403
        assert loop.run(status(wrong_token, origin)) == 403
        assert loop.run(status(ws_url, None)) == 403
        assert rebound(web.app.port) == 421  # another name for this address: DNS rebinding
        assert loop.run(status(ws_url, origin)) == 101
        # a page of another origin that knows the token still cannot open the socket
        with open_web(browser, other.url) as page:
            opened = page.page.evaluate(
                """url => new Promise(done => {
                     const ws = new WebSocket(url);
                     ws.onopen = () => done(true);
                     ws.onerror = () => done(false);
                   })""",
                ws_url,
            )
        assert opened is False
    assert said(web, "refused a page socket from another origin")


def test_the_api_key_and_the_reference_voice_never_reach_the_page(
    browser: Any, loop: LoopThread, fake_files: tuple[Path, Any, Path], tmp_path: Path
) -> None:
    import base64

    wav, _, _ = fake_files
    voice = base64.b64encode(wav.read_bytes()).decode()
    options = RunOptions(api_key=SECRET, ref_audio=str(wav), preset="minicpmo")
    script = Script.from_dict(
        {"rules": [{"on": "unit", "index": 1, "do": "speak", "audio_ms": 500}]}
    )
    frames: list[str | bytes] = []
    with (
        reference(
            loop, profile="minicpmo", engine="scripted", api_key=SECRET, script=script
        ) as server,
        serving(loop, server.url, options=options, output_dir=tmp_path) as web,
        open_web(browser, web.url, **GRANTED) as page,
    ):
        page.page.on("websocket", lambda ws: ws.on("framereceived", lambda f: frames.append(f)))
        page.page.reload()
        page.start()
        page.wait("() => Object.keys(window.duplexPage.stats.played).length > 0", timeout_s=20)
        assert page.stop() == "stopped"
        html = page.page.content()
    texts = [f if isinstance(f, str) else f.decode("latin-1") for f in frames] + [html]
    assert len(texts) > 20
    for text in texts:
        assert SECRET not in text and voice[100:160] not in text and "data:audio" not in text
    bundle = web.app.bundles[1]
    for path in bundle.rglob("*.json*"):
        assert SECRET not in path.read_text()


def test_the_page_runs_under_its_own_content_security_policy(
    browser: Any, loop: LoopThread, tmp_path: Path
) -> None:
    with (
        reference(loop, profile="minicpmo", engine="scripted") as server,
        serving(loop, server.url, output_dir=tmp_path) as web,
        open_web(browser, web.url, bypass_csp=False, **GRANTED) as page,
    ):
        p = page.page
        p.wait_for_selector("#start:not([disabled])")
        p.click("#start")
        p.wait_for_selector('#status[data-state="live"]', timeout=30_000)
        p.wait_for_selector("#events li", state="attached", timeout=30_000)  # both ways
        p.click("#stop")
        p.wait_for_selector('#status[data-state="stopped"]', timeout=60_000)
        assert page.errors == []  # a blocked script, worklet or socket would be logged here
    assert web.app.bundles[1].is_dir()
