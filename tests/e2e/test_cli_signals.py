"""SIGTERM and SIGHUP finish the run bundle as Ctrl-C does: status, exit 128 + signal.

Two quick signals still finish it; a third forces the exit, naming what is incomplete.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import signal
import time
import wave
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.eval_support import servers, write_script
from tests.e2e.helpers import CLI, ENV, load

SIGNALS = [(signal.SIGTERM, 143, "terminated"), (signal.SIGHUP, 129, "hangup")]


def _long_wav(path: Path, seconds: int = 30) -> Path:
    """A quiet 30 s WAV: long enough to be stopped mid-stream."""
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(b"\x10\x00" * 16000 * seconds)
    return path


async def _stop_mid_stream(argv: list[str], run: Path, sig: signal.Signals) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        *argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=ENV
    )
    try:
        for _ in range(300):  # wait until the session streams (events recorded)
            events = run / "events.jsonl"
            if events.exists() and events.stat().st_size > 0:
                break
            await asyncio.sleep(0.1)
        await asyncio.sleep(1.0)
        proc.send_signal(sig)
        _, err = await asyncio.wait_for(proc.communicate(), 60)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode is not None
    return proc.returncode, err.decode()


@pytest.mark.parametrize(("sig", "code", "status"), SIGNALS, ids=["SIGTERM", "SIGHUP"])
async def test_stream_stopped_by_a_signal_keeps_the_record(
    sig: signal.Signals, code: int, status: str, tmp_path: Path
) -> None:
    run = tmp_path / "run"
    wav = _long_wav(tmp_path / "long.wav")
    argv = [CLI, "stream", "--input-audio", str(wav), "--output-dir", str(run), "-q"]
    returncode, err = await _stop_mid_stream(argv, run, sig)
    assert returncode == code, err
    assert "Traceback" not in err and f"{status}: the bundle keeps" in err
    result = load(run, "result.json")
    assert result["status"] == status and result["ok"] is False
    timeline = load(run, "input_timeline.json")
    assert 0 < len(timeline["appends"]) < 150  # stopped mid-stream, what was sent recorded


async def test_live_stopped_by_sigterm_keeps_the_record(tmp_path: Path) -> None:
    pytest.importorskip("cv2")
    run = tmp_path / "run"
    wav = _long_wav(tmp_path / "long.wav")
    argv = [
        CLI, "live", "--mic-file", str(wav), "--no-camera", "--no-playback", "-q",
        "--output-dir", str(run),
    ]  # fmt: skip
    returncode, err = await _stop_mid_stream(argv, run, signal.SIGTERM)
    assert returncode == 143, err
    assert "Traceback" not in err
    result = json.loads((run / "result.json").read_text())
    assert result["ok"] is False and result["status"] == "terminated"
    assert (run / "input_timeline.json").exists()


async def _signal_mid_stream(
    run: Path, url: str, signals: list[signal.Signals], gap_s: float, before: Any = None
) -> tuple[int, str, float]:
    """Stream a long WAV to `url`; once it streams, `before()`, then `signals`, `gap_s` apart.

    Returns the exit code, stderr and the seconds from the last signal to the exit.
    """
    wav = _long_wav(run.parent / "long.wav")
    argv = [CLI, "stream", "--input-audio", str(wav), "--url", url, "--output-dir", str(run)]
    proc = await asyncio.create_subprocess_exec(
        *argv, "-q", stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=ENV
    )
    try:
        for _ in range(300):
            events = run / "events.jsonl"
            if events.exists() and events.stat().st_size > 0:
                break
            await asyncio.sleep(0.1)
        await asyncio.sleep(0.5)
        if before is not None:
            before()
        for sig in signals:
            proc.send_signal(sig)
            await asyncio.sleep(gap_s)
        sent = time.monotonic()
        _, err = await asyncio.wait_for(proc.communicate(), 60)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode is not None
    return proc.returncode, err.decode(), time.monotonic() - sent


@pytest.mark.parametrize(
    "second", [signal.SIGINT, signal.SIGTERM], ids=["Ctrl-C twice", "INT then TERM"]
)
async def test_two_quick_signals_wait_for_the_bundle(
    second: signal.Signals, tmp_path: Path
) -> None:
    """The second signal arrives while the run finishes: it waits, and says so (issue 32)."""
    run = tmp_path / "run"
    with servers(write_script(tmp_path / "s.json")) as (server,):
        code, err, _ = await _signal_mid_stream(run, server.url, [signal.SIGINT, second], 0.05)
    assert code == 130, err
    assert "Traceback" not in err and "still finishing the bundle, please wait" in err
    assert "interrupted: the bundle keeps" in err
    result = load(run, "result.json")
    assert result["status"] == "interrupted" and result["exit_code"] == 130
    assert (run / "output.wav").exists() and (run / "input_timeline.json").exists()


async def test_a_third_signal_forces_exit_naming_what_is_incomplete(tmp_path: Path) -> None:
    """A frozen server holds the close: the third Ctrl-C exits at once, saying what is missing."""
    run = tmp_path / "run"
    with servers(write_script(tmp_path / "s.json")) as (server,):
        freeze = functools.partial(os.kill, server.proc.pid, signal.SIGSTOP)
        try:
            code, err, after = await _signal_mid_stream(
                run, server.url, [signal.SIGINT] * 3, 0.3, before=freeze
            )
        finally:
            os.kill(server.proc.pid, signal.SIGCONT)
    assert code == 130, err
    assert after < 5  # the close would have waited for the frozen server for 20 s
    assert "Traceback" not in err and "still finishing the bundle" in err
    assert f"SIGINT: forced exit: {run} is incomplete (not written: " in err
    assert "result.json" in err.splitlines()[-1] and not (run / "result.json").exists()
