"""Shared pieces of the CLI end-to-end tests: run `duplex-cli`, read a bundle, check it whole."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import wave
from pathlib import Path
from typing import Any

CLI = str(Path(sys.executable).parent / "duplex-cli")
ENV = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200"}

#: A deterministic answer script: unit 1 opens a 4 s answer sent in 500 ms deltas, 250 ms
#: apart (so it is still playing when later units arrive); the model listens at the commit.
LONG_ANSWER_SCRIPT: dict[str, Any] = {
    "rules": [
        {"on": "unit", "index": 1, "do": "speak", "audio_ms": 4000, "text": "a long answer"},
        {"on": "commit", "do": "listen"},
    ],
    "defaults": {"unit": {"do": "listen"}},
    "chunk_ms": 500,
    "chunk_interval_ms": 250,
}


async def run_cli(*args: str, timeout: float = 90.0) -> subprocess.CompletedProcess[str]:
    """`duplex-cli stream ARGS` as a subprocess; stdout and stderr decoded."""
    proc = await asyncio.create_subprocess_exec(
        CLI,
        "stream",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=ENV,
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout)
    assert proc.returncode is not None
    return subprocess.CompletedProcess(args, proc.returncode, out.decode(), err.decode())


def load(run: Path, name: str) -> Any:
    """A JSON file of the bundle."""
    return json.loads((run / name).read_text())


def events(run: Path) -> list[dict[str, Any]]:
    """`events.jsonl` lines."""
    return [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines()]


def wav_ms(path: Path) -> int:
    """Length of a WAV in ms."""
    with wave.open(str(path)) as w:
        return w.getnframes() * 1000 // w.getframerate()


def wav_bytes(path: Path) -> int:
    """PCM bytes in a WAV."""
    with wave.open(str(path)) as w:
        return w.getnframes() * w.getsampwidth() * w.getnchannels()


def delta_bytes(evs: list[dict[str, Any]]) -> int:
    """Audio bytes of every `response.output_audio.delta` recorded (payloads are elided)."""
    total = 0
    for e in evs:
        if e["type"] == "response.output_audio.delta":
            found = re.search(r"(\d+) bytes", e["event"]["delta"])
            assert found is not None
            total += int(found.group(1))
    return total


def seqs(evs: list[dict[str, Any]]) -> list[int]:
    """The `server_event_seq`s of the recorded events, in order."""
    return [e["event"]["server_event_seq"] for e in evs if "server_event_seq" in e["event"]]


def assert_received_once(run: Path) -> list[dict[str, Any]]:
    """Every server event recorded once, in order, and `output.wav` holds every delta once."""
    evs = events(run)
    got = seqs(evs)
    assert got == sorted(set(got)), "a server_event_seq is duplicated or out of order"
    assert got == list(range(1, len(got) + 1)), "a server_event_seq is missing"
    assert wav_bytes(run / "output.wav") == delta_bytes(evs)
    return evs


def assert_server_view_matches(run: Path, server_rows: list[dict[str, Any]]) -> None:
    """The appends the server accepted are the timeline's rows: no gap, no duplicate."""
    rows = load(run, "input_timeline.json")["appends"]
    assert [r["event_id"] for r in server_rows] == [r["event_id"] for r in rows]
    for mine, theirs in zip(rows, server_rows, strict=True):
        assert mine["audio_end_ms"] == theirs["audio_end_ms"]
        assert mine["unit_kind"] == theirs["unit_kind"]
        assert mine["unit_index"] == theirs["unit_index"]
        assert [f["sha256"] for f in mine["frames"]] == [f["sha256"] for f in theirs["frames"]]
