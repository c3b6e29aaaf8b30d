"""`duplex-cli web` as a subprocess: the URL with its token, a session from a real Chromium
page with the terminal's state lines and `bundle: <dir>`, Ctrl-C, the network warning, and
bad options refused before anything listens. `duplex-cli replay` sends the bundle again."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.helpers import CLI, ENV
from tests.support.media_files import write_audio_file
from tests.support.web import LoopThread, chromium_with, fake_device_args, open_web

URL_LINE = re.compile(r"duplex-cli web: open (http://127\.0\.0\.1:\d+/#token=[\w-]{16,})")


@pytest.fixture(scope="module")
def loop() -> Iterator[LoopThread]:
    thread = LoopThread()
    try:
        yield thread
    finally:
        thread.close()


@pytest.fixture(scope="module")
def server(loop: LoopThread) -> Iterator[Any]:
    from duplex_client.server import ReferenceServer, Script

    script = Script.from_dict(
        {"rules": [{"on": "unit", "index": 1, "do": "speak", "audio_ms": 600}]}
    )
    srv = ReferenceServer(profile="minicpmo", engine="scripted", script=script)
    loop.run(srv.start())
    try:
        yield srv
    finally:
        loop.run(srv.stop())


class WebProcess:
    """`duplex-cli web ARGS` running; its stdout lines are collected as they come."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen(
            [CLI, "web", "--no-open", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=ENV,
        )
        self.lines: list[str] = []

    def read_until(self, pattern: str, timeout_s: float = 30.0) -> re.Match[str]:
        """Read stdout lines until one matches `pattern`."""
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            self.lines.append(line.rstrip("\n"))
            found = re.search(pattern, line)
            if found:
                return found
        raise AssertionError(f"no line matching {pattern!r} in {self.lines}")

    def interrupt(self) -> tuple[int, str, str]:
        """Ctrl-C; the exit code and the rest of stdout and stderr."""
        self.proc.send_signal(signal.SIGINT)
        out, err = self.proc.communicate(timeout=60)
        return self.proc.returncode, out, err


def test_a_browser_session_through_the_cli_prints_its_states_and_bundle(
    server: Any, tmp_path: Path
) -> None:
    wav = write_audio_file(tmp_path / "tone.wav", 4.0, 16000, 440.0)
    web = WebProcess("--url", server.url, "--output-dir", str(tmp_path / "runs"))
    try:
        url = web.read_until(URL_LINE.pattern).group(1)
        with chromium_with(fake_device_args(wav)) as browser, open_web(browser, url) as page:
            page.start(mode="model")
            page.wait("() => Object.keys(window.duplexPage.stats.played).length > 0")
            assert page.stop() == "stopped"
            bundle = Path(web.read_until(r"^bundle: (.+)$").group(1))
        code, out, err = web.interrupt()
    finally:
        if web.proc.poll() is None:
            web.proc.kill()
    assert code == 0, err
    said = "\n".join(web.lines) + out
    for state in ("connecting (minicpmo, model turns)", "live", "stopped"):
        assert f"session 1: {state}" in said, said
    assert bundle.parent == tmp_path / "runs" and (bundle / "result.json").exists()
    assert json.loads((bundle / "result.json").read_text())["ok"]
    # the recorded input goes out again, byte for byte, to another server
    try:
        # Well inside the test's own time limit, so that a replay that hangs says where.
        replayed = subprocess.run(
            [CLI, "replay", str(bundle), "--url", server.url, "-o", str(tmp_path / "again")],
            capture_output=True, text=True, env=ENV, timeout=60,
        )  # fmt: skip
    except subprocess.TimeoutExpired as exc:
        out, err = _text(exc.stdout), _text(exc.stderr)
        pytest.fail(f"replay still running after 60 s; it said:\n{out}\n{err}")
    assert replayed.returncode == 0, replayed.stderr
    assert "input identical: yes" in replayed.stdout + replayed.stderr


def _text(output: str | bytes | None) -> str:
    """What a timed-out child wrote (bytes even in text mode), as text."""
    if isinstance(output, bytes):
        return output.decode(errors="replace")
    return output or ""


def test_listening_beyond_loopback_warns(tmp_path: Path) -> None:
    web = WebProcess("--host", "0.0.0.0", "--url", "ws://127.0.0.1:9")
    try:
        web.read_until(r"duplex-cli web: open http://127\.0\.0\.1:\d+/#token=")
        code, _, err = web.interrupt()
    finally:
        if web.proc.poll() is None:
            web.proc.kill()
    assert code == 0
    assert "warning: listening on 0.0.0.0: the page is open to the network" in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--ref-audio", "{tmp}/notes.txt"], "--ref-audio: "),
        (["--jitter-ms", "-1"], "--jitter-ms must be >= 0, got -1"),
        (["--url", "ftp://example.com"], "unsupported URL scheme 'ftp'"),
        (["--url", ""], "--url is empty: give ws://host:port"),  # never the embedded server
        (["--port", "70000"], "--port must be 0..65535, got 70000"),
    ],
)
def test_bad_options_are_refused_before_listening(
    tmp_path: Path, args: list[str], message: str
) -> None:
    (tmp_path / "notes.txt").write_text("not a voice")
    argv = [a.replace("{tmp}", str(tmp_path)) for a in args]
    done = subprocess.run(
        [CLI, "web", "--no-open", "--output-dir", str(tmp_path / "runs"), *argv],
        capture_output=True, text=True, env=ENV, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert done.stdout == "" and not (tmp_path / "runs").exists()
