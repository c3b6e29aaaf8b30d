"""A run's record is never silently lost (issue 32): cancelled twice (Ctrl-C twice in a
notebook) it still finishes its bundle; failed in a way nobody foresaw, it says why."""

from __future__ import annotations

import asyncio
import json
import wave
from pathlib import Path

import pytest

from duplex_client.client.streaming import StreamResult
from duplex_client.run.options import RunOptions
from duplex_client.run.session_run import finish_regardless, run_session
from duplex_client.run.sources import SourceLink
from duplex_client.run.sources.files import FileSource
from duplex_client.run.stream import stream_clip
from duplex_client.server import ReferenceServer
from duplex_client.usage import UsageError


def _wav(path: Path, seconds: int) -> Path:
    """A quiet 16 kHz PCM16 WAV."""
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(b"\x10\x00" * 16000 * seconds)
    return path


async def test_finish_regardless_runs_to_the_end_then_raises_the_cancel() -> None:
    done: list[str] = []

    async def work() -> None:
        await asyncio.sleep(0.2)
        done.append("written")

    task = asyncio.create_task(finish_regardless(work()))
    await asyncio.sleep(0.05)
    task.cancel()
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert done == ["written"]


async def test_finish_regardless_raises_the_works_own_failure() -> None:
    async def work() -> None:
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        await finish_regardless(work())


async def test_a_run_cancelled_twice_writes_its_result(tmp_path: Path) -> None:
    wav = _wav(tmp_path / "long.wav", 20)
    run = tmp_path / "run"
    async with ReferenceServer(profile="minicpmo", engine="scripted") as server:
        task = asyncio.create_task(stream_clip(server.url, input_audio=str(wav), output_dir=run))
        for _ in range(100):
            if (run / "events.jsonl").exists() and (run / "events.jsonl").stat().st_size:
                break
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.3)
        task.cancel()
        for _ in range(5):  # more cancels while it finishes
            await asyncio.sleep(0.01)
            task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    result = json.loads((run / "result.json").read_text())
    assert result["status"] == "interrupted" and result["exit_code"] == 130


class _Failing(FileSource):
    """A file source whose sending fails in a way no one foresaw (a bug, say)."""

    async def send(self, link: SourceLink) -> StreamResult:
        raise RuntimeError("the sender broke")


async def test_an_unforeseen_failure_is_in_result_json(tmp_path: Path) -> None:
    """The run raises on, but its result.json says what failed, never `error: null` (#32)."""
    wav = _wav(tmp_path / "q.wav", 1)
    run = tmp_path / "run"
    options = RunOptions(input_audio=str(wav), output_dir=run)
    async with ReferenceServer(profile="minicpmo", engine="scripted") as server:
        with pytest.raises(RuntimeError, match="the sender broke"):
            await run_session(server.url, options, _Failing())
    result = json.loads((run / "result.json").read_text())
    assert result["ok"] is False and result["exit_code"] == 1
    assert result["error"] == "RuntimeError: the sender broke"


async def test_aura_with_audio_only_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    """Its family needs video on every unit: a usage error up front, never a bundle whose
    result.json says `error: null` (#32; a server requiring video: the bad-input table)."""
    wav = _wav(tmp_path / "q.wav", 1)
    run = tmp_path / "run"
    with pytest.raises(UsageError, match=r"preset aura .* requires video on every unit"):
        await stream_clip("ws://127.0.0.1:9", input_audio=str(wav), preset="aura", output_dir=run)
    assert not run.exists()
