"""SIGTERM and SIGHUP finish the run bundle as Ctrl-C does: status, exit 128 + signal."""

from __future__ import annotations

import asyncio
import json
import signal
import wave
from pathlib import Path

import pytest

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
