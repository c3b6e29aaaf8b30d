"""A run cancelled twice (Ctrl-C twice in a notebook) still finishes its bundle (issue 32)."""

from __future__ import annotations

import asyncio
import json
import wave
from pathlib import Path

import pytest

from duplex_client.run.session_run import finish_regardless
from duplex_client.run.stream import stream_clip
from duplex_client.server import ReferenceServer


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
    wav = tmp_path / "long.wav"
    with wave.open(str(wav), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(b"\x10\x00" * 16000 * 20)
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
