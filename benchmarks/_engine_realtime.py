"""Part 3 of `bench_engine`: sessions streaming in real time against a `duplex-cli serve` process.

The server runs pinned to one core (unless `BENCH_ENGINE_UNPINNED` is set); each level is N
clients from this process streaming the same conversation-like input from different points of
its cycle, recording the unit round trip and the server's CPU (its recognition worker included).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson

from benchmarks._common import psutil, stop_process

#: A level is sustained while the unit round trip p99 stays under one unit...
ROUND_TRIP_LIMIT_MS = 1000.0
#: ...and the server uses under this share of its core.
CPU_LIMIT = 0.9
#: Set to leave the server (and its recognition worker) free to use every core.
UNPINNED_ENV = "BENCH_ENGINE_UNPINNED"


def pinned() -> bool:
    """Whether servers are pinned to one core (the default)."""
    return os.environ.get(UNPINNED_ENV, "") in ("", "0")


class _Server:
    """`duplex-cli serve --engine ENGINE`, pinned to one core unless `UNPINNED_ENV` is set."""

    def __init__(self, engine: str, max_sessions: int) -> None:
        cli = Path(sys.executable).parent / "duplex-cli"
        args = [str(cli), "serve", "--port", "0", "--max-sessions", str(max_sessions)]
        args += ["--engine", engine.removesuffix(INLINE)]
        if engine.endswith(INLINE):
            args.append("--asr-inline")
        self.proc = subprocess.Popen(
            args,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env={**os.environ, "NO_COLOR": "1"},
        )
        assert self.proc.stdout is not None
        self.url = ""
        for line in self.proc.stdout:
            words = [w for w in line.split() if w.startswith("ws://")]
            if words:
                self.url = words[0]
                break
        if not self.url:
            self.stop()
            raise RuntimeError("duplex-cli serve did not print its URL")
        if pinned():
            os.sched_setaffinity(self.proc.pid, {max(os.sched_getaffinity(0))})

    def cpu_s(self) -> float:
        """User + system CPU seconds of the server and its recognition worker so far."""
        server = psutil().Process(self.proc.pid)
        total = 0.0
        for proc in [server, *server.children(recursive=True)]:
            with contextlib.suppress(psutil().NoSuchProcess):
                times = proc.cpu_times()
                total += times.user + times.system
        return total

    def stop(self) -> None:
        """SIGINT, then kill if it hangs."""
        stop_process(self.proc)


def append_event(k: int, pcm: bytes, frame: str | None) -> dict[str, Any]:
    """The `k`-th append of a benchmark stream: PCM, and the unit's frame when it has one."""
    event: dict[str, Any] = {
        "type": "input_audio_buffer.append",
        "event_id": f"evt_{k}",
        "audio": base64.b64encode(pcm).decode(),
    }
    if frame is not None:
        event["video_frames"] = [frame]
    return event


def _rotate(
    stream: list[tuple[bytes, str | None]], i: int, count: int
) -> list[tuple[bytes, str | None]]:
    """Session `i` of `count` starts `i * 10 / count` whole seconds into the speech cycle."""
    shift = 5 * (i * 10 // count)
    return stream[shift:] + stream[:shift]


async def _client(
    url: str, stream: list[tuple[bytes, str | None]], t0: float, trips: list[float]
) -> int:
    """Stream in real time from `t0`; collect unit round trips; returns responses seen."""
    from websockets.asyncio.client import connect

    ws = await connect(
        f"{url}?duplex=1&model=m&autostart=0", proxy=None, compression=None, max_size=None
    )
    sent: dict[int, float] = {}
    responses = 0
    update = {"type": "session.update", "session": {"model": "m", "turn_detection": None}}
    await ws.send(orjson.dumps(update).decode())

    async def read() -> None:
        nonlocal responses
        highest = 0
        async for data in ws:
            event = orjson.loads(data)
            seq = event.get("server_event_seq")
            if isinstance(seq, int) and seq > highest + 50:
                highest = seq
                await ws.send(orjson.dumps({"type": "session.event_ack", "server_event_seq": seq}))
            kind = event.get("type")
            meta = None
            if kind == "response.listen" and "response_id" not in event:
                meta = event["response"]["metadata"]
            elif kind == "response.speak":
                meta = event.get("metadata") or {}
                responses += 1
            if meta and meta.get("unit_index") in sent:
                trips.append(time.monotonic() - sent.pop(meta["unit_index"]))

    reader = asyncio.create_task(read())
    for k, (pcm, frame) in enumerate(stream):
        await asyncio.sleep(max(0.0, t0 + k * 0.2 - time.monotonic()))
        if frame is not None:
            sent[k // 5] = time.monotonic()
        await ws.send(orjson.dumps(append_event(k, pcm, frame)).decode())
    await asyncio.sleep(1.0)
    await ws.send(orjson.dumps({"type": "session.close"}).decode())
    with contextlib.suppress(Exception):
        await asyncio.wait_for(reader, 10)
    await ws.close()
    return responses


async def _level(
    server: _Server, stream: list[tuple[bytes, str | None]], count: int, trips: list[float]
) -> tuple[list[int], float]:
    """`count` sessions streaming at once; returns their responses and the server's CPU share."""
    t0 = time.monotonic() + 2.0
    seconds = len(stream) / 5

    async def cpu_share() -> float:
        await asyncio.sleep(t0 + 1.0 - time.monotonic())
        cpu0, wall0 = server.cpu_s(), time.monotonic()
        await asyncio.sleep(seconds - 1.0)
        return (server.cpu_s() - cpu0) / (time.monotonic() - wall0)

    # Independent users: start phases spread over one unit, and each session starts at
    # another point of the 10 s speech cycle, so utterances end apart.
    clients = [
        _client(server.url, _rotate(stream, i, count), t0 + i / count, trips) for i in range(count)
    ]
    share = asyncio.create_task(cpu_share())
    responses = await asyncio.gather(*clients)
    return list(responses), await share


#: The baseline variant of the speech engine: recognition in the server's event loop.
INLINE = "-inline"


def realtime(
    levels: list[tuple[str, int]], stream: list[tuple[bytes, str | None]]
) -> list[list[str]]:
    """Run each (engine, sessions) level against a pinned server; one row per level."""
    rows = []
    for engine, n in levels:
        server = _Server(engine, max_sessions=n)
        trips: list[float] = []
        try:
            responses, cpu = asyncio.run(_level(server, stream, n, trips))
        finally:
            server.stop()
        ms = sorted(t * 1000 for t in trips)
        p50 = statistics.median(ms) if ms else float("nan")
        p99 = ms[min(len(ms) - 1, int(len(ms) * 0.99))] if ms else float("nan")
        kept_up = p99 < ROUND_TRIP_LIMIT_MS and cpu < CPU_LIMIT
        per_session_ms = cpu * 1000 / n
        rows.append(
            [
                engine,
                str(n),
                f"{cpu * 100:.0f}%",
                f"{per_session_ms:.1f}",
                f"{1000 / per_session_ms:.0f}",
                f"{p50:.0f}",
                f"{p99:.0f}",
                str(sum(responses)),
                "yes" if kept_up else "no",
            ]
        )
    return rows
