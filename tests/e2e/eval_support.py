"""Pieces of the `duplex-cli eval` end-to-end tests: servers to kill, the CLI, the summary."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.e2e.helpers import CLI, ENV

#: Unit 1 opens a 1 s answer; the commit (end of input) is a listen.
ANSWER_SCRIPT: dict[str, Any] = {
    "rules": [
        {"on": "unit", "index": 1, "do": "speak", "audio_ms": 1000, "text": "an answer"},
        {"on": "commit", "do": "listen"},
    ],
    "defaults": {"unit": {"do": "listen"}},
}


class ServerProcess:
    """`python -m duplex_client.server` (scripted engine) in a process a test can kill."""

    def __init__(self, script: Path, *, max_sessions: int = 4, extra: tuple[str, ...] = ()) -> None:
        self.proc = subprocess.Popen(
            [
                *(sys.executable, "-m", "duplex_client.server", "--port", "0"),
                *("--engine", "scripted", "--max-sessions", str(max_sessions)),
                *("--script", str(script)),
                *extra,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=ENV,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line.startswith("listening "), line + self.proc.stderr.read()  # type: ignore[union-attr]
        self.url = line.split()[1]

    def kill(self) -> None:
        """SIGKILL: the endpoint dies mid-eval."""
        with contextlib.suppress(ProcessLookupError):
            self.proc.kill()
        self.proc.wait(10)

    def close(self) -> None:
        """Stop it if it still runs."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


@contextlib.contextmanager
def servers(script: Path, n: int = 1, *, max_sessions: int = 4) -> Iterator[list[ServerProcess]]:
    """`n` scripted reference servers on loopback ports, stopped at the end."""
    started: list[ServerProcess] = []
    try:
        for _ in range(n):
            started.append(ServerProcess(script, max_sessions=max_sessions))
        yield started
    finally:
        for server in started:
            server.close()


def write_script(path: Path, script: dict[str, Any] | None = None) -> Path:
    """The scripted engine's JSON script file."""
    path.write_text(json.dumps(script or ANSWER_SCRIPT), encoding="utf-8")
    return path


def eval_cli(*args: str, timeout: float = 240.0) -> subprocess.CompletedProcess[str]:
    """`duplex-cli eval ARGS` to its end."""
    return subprocess.run(
        [CLI, "eval", *args], capture_output=True, text=True, env=ENV, timeout=timeout
    )


def start_eval(*args: str) -> subprocess.Popen[str]:
    """`duplex-cli eval ARGS` in the background (to signal or kill it)."""
    return subprocess.Popen(
        [CLI, "eval", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
        start_new_session=True,
    )


def finished(out: Path) -> list[Path]:
    """Bundles with a final result (ok or failed)."""
    done = []
    for path in out.glob("items/**/result.json"):
        with contextlib.suppress(OSError, ValueError):
            if json.loads(path.read_text())["status"] in ("ok", "failed"):
                done.append(path.parent)
    return done


def wait_for(predicate: Any, timeout: float = 120.0, what: str = "condition") -> None:
    """Poll `predicate` every 50 ms until true (fails the test after `timeout`)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def rows(out: Path) -> list[dict[str, Any]]:
    """summary.jsonl's rows."""
    text = (out / "summary.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def signal_group(proc: subprocess.Popen[str], sig: signal.Signals) -> None:
    """Send `sig` to the process (its own session: children are not signalled)."""
    os.kill(proc.pid, sig)
