"""events.jsonl rows carry media time: negative before the stream, null without a listener."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from duplex_client import DuplexClient
from duplex_client.bundle.writer import RunBundle
from duplex_client.framing.clock import MediaClock
from tests.support.scripted_server import ScriptedServer


def rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.parametrize("later_event", [True, False])
async def test_rows_before_the_stream_get_media_time_once_it_starts(
    tmp_path: Path, later_event: bool
) -> None:
    clock = MediaClock("realtime")
    events = tmp_path / "run" / "events.jsonl"
    async with ScriptedServer() as server:
        client = DuplexClient(server.url, model="m")
        bundle = RunBundle(tmp_path / "run")
        bundle.attach(client, clock=clock)
        await client.connect()  # session.created arrives before media time 0
        assert [r["media_ms"] for r in rows(events)] == [None]  # on disk at once
        await asyncio.sleep(0.05)
        clock.start()
        if later_event:  # the next event rewrites the early rows; else finish() does
            await server.peer.send({"type": "response.listen", "response_id": None})
            for _ in range(100):
                if len(rows(events)) == 2:
                    break
                await asyncio.sleep(0.01)
        await client.close()
        bundle.finish({"ok": True})
    lines = rows(events)
    assert lines[0]["type"] == "session.created"
    media0 = (clock.t0 - bundle.origin) * 1000  # media time 0 on the t_ms scale
    assert lines[0]["media_ms"] < -40
    assert abs(lines[0]["media_ms"] - (lines[0]["t_ms"] - media0)) < 0.01
    assert all(isinstance(r["media_ms"], float) for r in lines)
    assert all(abs(r["media_ms"] - (r["t_ms"] - media0)) < 0.01 for r in lines)


async def test_without_a_realtime_clock_media_time_is_null(tmp_path: Path) -> None:
    clock = MediaClock("asap")
    async with ScriptedServer() as server:
        client = DuplexClient(server.url, model="m")
        bundle = RunBundle(tmp_path / "run")
        bundle.attach(client, clock=clock)
        await client.connect()
        clock.start()
        await client.close()
        bundle.finish({"ok": True})
    lines = rows(tmp_path / "run" / "events.jsonl")
    assert lines and all(r["media_ms"] is None for r in lines)
