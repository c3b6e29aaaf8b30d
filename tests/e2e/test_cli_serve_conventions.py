"""`duplex-cli serve` conventions: the bind warning, plain log lines, options checked first."""

from __future__ import annotations

import os
import pty
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.e2e.helpers import CLI, ENV

WARNING = "the server is open to the network"


def _serve_until_ready(*args: str, terminal: bool = False) -> tuple[str, str]:
    """Start `serve ARGS`, stop it once it serves; its stdout and stderr (pipes or a pty)."""
    if terminal:
        return _serve_on_a_terminal(*args)
    proc = subprocess.Popen(
        [CLI, "serve", "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
    )
    assert proc.stdout is not None
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and "Health:" not in (line := proc.stdout.readline()):
            assert line, "serve exited early"
    finally:
        proc.send_signal(signal.SIGINT)
        rest, err = proc.communicate(timeout=30)
    return rest, err


def _serve_on_a_terminal(*args: str) -> tuple[str, str]:
    """stderr on a pty: what a person at a terminal sees."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [CLI, "serve", "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=follower,
        text=True,
        env={**ENV, "TERM": "xterm-256color"},
    )
    os.close(follower)
    assert proc.stdout is not None
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and "Health:" not in (line := proc.stdout.readline()):
            assert line, "serve exited early"
    finally:
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=30)
    seen = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    os.close(leader)
    return out, seen.decode().replace("\r\n", "\n")


def test_binding_beyond_loopback_without_a_key_warns_once() -> None:
    _, err = _serve_until_ready("--host", "0.0.0.0", "--engine", "scripted")
    lines = [line for line in err.splitlines() if WARNING in line]
    assert len(lines) == 1 and lines[0].startswith("warning: listening on 0.0.0.0"), err


@pytest.mark.parametrize(
    "args", [["--host", "127.0.0.1"], ["--host", "0.0.0.0", "--api-key", "k"]], ids=str
)
def test_loopback_or_a_key_gives_no_warning(args: list[str]) -> None:
    _, err = _serve_until_ready(*args, "--engine", "scripted")
    assert WARNING not in err


def test_log_lines_look_the_same_on_a_terminal_and_redirected() -> None:
    _, piped = _serve_until_ready("--host", "0.0.0.0", "--engine", "scripted")
    _, tty = _serve_until_ready("--host", "0.0.0.0", "--engine", "scripted", terminal=True)
    assert "\x1b[" not in tty  # no colour codes, no cursor moves
    warning = [line for line in tty.splitlines() if WARNING in line]
    assert warning == [line for line in piped.splitlines() if WARNING in line]


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (["--first-unit-ms", "0"], "--first-unit-ms"),
        (["--max-sessions", "0"], "--max-sessions"),
        (["--port", "99999"], "--port"),
    ],
)
def test_a_bad_serve_option_is_one_line_and_exit_2(args: list[str], flag: str) -> None:
    done = subprocess.run(
        [CLI, "serve", *args], capture_output=True, text=True, env=ENV, timeout=30, check=False
    )
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and flag in lines[0], done.stderr
    assert "Serving" not in done.stdout and "Traceback" not in done.stderr


def test_serve_has_short_verbosity_flags(tmp_path: Path) -> None:
    text = subprocess.run(
        [CLI, "serve", "--help"], capture_output=True, text=True, env=ENV, check=False
    ).stdout
    assert "-v" in text and "-q" in text and "--no-no-" not in text
