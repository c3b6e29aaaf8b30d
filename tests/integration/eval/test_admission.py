"""Admission by measured cost and lost timing, in an eval against the reference server."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from pathlib import Path

import pytest

from duplex_client.eval import EvalItem, run_eval_async
from duplex_client.eval.budget import client_cores
from duplex_client.eval.cost import CostModel, ItemCost
from duplex_client.eval.runner import EvalProgress
from duplex_client.run.options import RunOptions
from duplex_client.server import ReferenceServer
from duplex_client.server.engine.script import Script
from duplex_client.server.limits import Limits
from tests.e2e.eval_support import ANSWER_SCRIPT
from tests.support.media_files import write_audio_file, write_clip

pytestmark = pytest.mark.timeout(180)


class Dear(CostModel):
    """Every item costs 60 % of the default budget: two never fit at once."""

    def _estimate(self, item: EvalItem) -> ItemCost:
        # no stream length: measurement never refines the injected cost away
        return ItemCost(client_cores() * 800.0 * 0.6, 0.0, "dear")


async def test_video_items_too_dear_for_the_cores_run_one_at_a_time_and_say_why(
    tmp_path: Path,
) -> None:
    clip = write_clip(tmp_path / "c.mp4", video_seconds=1.0, fps=10, audio_seconds=1.0)
    items = [EvalItem(f"v{i}", input_video=str(clip)) for i in range(3)]
    progress = EvalProgress()
    script = Script.from_dict(ANSWER_SCRIPT)
    async with ReferenceServer(
        engine="scripted", script=script, limits=Limits(max_sessions=4)
    ) as server:
        result = await run_eval_async(
            items,
            output_dir=tmp_path / "eval",
            urls=[server.url],
            concurrency=3,
            progress=progress,
            cost_model=Dear(RunOptions()),
        )
    assert result.exit_code == 0, [r.result.get("error") for r in result.items]
    admission = result.summary["admission"]
    cost = round(client_cores() * 800.0 * 0.6)
    message = f"capped at 1 by planning cost: {cost} ms per stream-second (budget 80% of"
    assert admission["max_running"] == 1 and admission["capped_at"] == 1
    assert admission["concurrency"] == 3 and admission["message"].startswith(message)
    # the machine's other load, read as the eval goes, may have changed since the progress line
    assert progress.max_running == 1 and progress.admission.startswith(message)
    summary_md = (tmp_path / "eval" / "summary.md").read_text(encoding="utf-8")
    assert f"At most 1 ran at once (concurrency 3): {message}" in summary_md


async def test_a_stream_the_client_cannot_pace_warns_once_and_is_timing_invalid(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    wav = write_audio_file(tmp_path / "a.wav", 3.0, 16000, 440.0)
    progress = EvalProgress()
    stop = asyncio.Event()

    async def stall() -> None:  # an event loop that stalls: no append can leave on time
        while not stop.is_set():
            await asyncio.sleep(0.3)
            time.sleep(0.15)

    script = Script.from_dict(ANSWER_SCRIPT)
    async with ReferenceServer(engine="scripted", script=script) as server:
        staller = asyncio.create_task(stall())
        with caplog.at_level(logging.WARNING, logger="duplex_client.eval"):
            result = await run_eval_async(
                [EvalItem("late", input_audio=str(wav))],
                output_dir=tmp_path / "eval",
                urls=[server.url],
                progress=progress,
            )
        stop.set()
        await staller
    lost = [r.getMessage() for r in caplog.records if "timing lost" in r.getMessage()]
    assert len(lost) == 1 and lost[0].startswith("items/late: timing lost at media")
    assert progress.timing_lost == 1
    doc = json.loads((tmp_path / "eval" / "items" / "late" / "result.json").read_text())
    assert doc["timing_valid"] is False, doc["error"]
    assert doc["timing_reason"].startswith("send lateness p99")
    assert [w for w in doc["warnings"] if w.startswith("timing lost")] == [lost[0][12:]]
    (row,) = result.rows
    assert row["timing_valid"] is False and row["timing_reason"] == doc["timing_reason"]
    assert result.summary["timing_invalid_items"] == [
        {"id": "late", "reason": doc["timing_reason"]}
    ]
