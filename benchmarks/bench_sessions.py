"""Concurrent sessions from one client process against one reference server process.

N realtime sessions (N = 10, 50, 100, 200, 400) each stream 200 ms PCM appends plus one
640x480 JPEG per second (on each 1 s unit close) through `stream(realtime=True)`, from one
client process, to `duplex-cli serve` (scripted engine) running in its own process on
loopback. Session start phases are spread evenly over one second, as independent users
would be. Each level runs in a fresh client process.

Reported per N: client CPU per session (the client process's CPU time over the streaming
window, divided by session-seconds streamed), the sessions one client core would carry at
that cost, append lateness against the media deadlines (p50/p99/max over every append of
every session), the client's RSS growth and minor page faults per append, the server's CPU
(its process, % of one core) and minor page faults per append (Linux), and the unit round
trip: from the release of the append closing a unit to the arrival of the server's
`response.listen` for that unit. The baseline of each row is the N = 10 row of the same run.
Run: `python -m benchmarks.bench_sessions` (`--quick` or `BENCH_QUICK=1`: a smoke run;
`BENCH_NO_RECONNECT=1`: clients with `reconnect=False`, i.e. without the resend outbox;
`BENCH_LEVELS=10,200`: only those N).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import os
import resource
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from benchmarks._common import (
    ServerProcess,
    TimedTarget,
    busy_cpu_s,
    camera_image,
    machine,
    minor_faults,
    percentile,
    psutil,
    quick_mode,
    speech_like_pcm,
    steal_cpu_s,
    table,
)

LEVELS = (10, 50, 100, 200, 400)
QUICK_LEVELS = (3,)
STREAM_SECONDS = 20
QUICK_SECONDS = 2
CHUNK_MS = 200
#: Session start phases are spread over this long (one unit: frames spread too).
SPREAD_S = 1.0
CONNECT_CONCURRENCY = 25
#: A unit round trip p99 above this means the server is falling behind.
ROUND_TRIP_SLOW_MS = 100.0
NO_RECONNECT_ENV = "BENCH_NO_RECONNECT"
#: A comma-separated list of N to run instead of LEVELS (e.g. `10,200`).
LEVELS_ENV = "BENCH_LEVELS"
LATENESS_TARGET_MS = 20.0
SESSIONS_PER_CORE_TARGET = 200


@dataclass(slots=True)
class Session:
    """One benchmark session: its client, timing wrapper and `response.listen` arrivals."""

    client: Any
    target: TimedTarget
    listens: list[tuple[int, float]] = field(default_factory=list)
    t0: float | None = None
    error: str | None = None

    def on_event(self, event: Any, received_at: float) -> None:
        """Record when each unit's `response.listen` arrived."""
        if event.type == "response.listen":
            meta = event.raw.get("response", {}).get("metadata", {})
            unit = meta.get("unit_index") if isinstance(meta, dict) else None
            if isinstance(unit, int):
                self.listens.append((unit, received_at))

    def round_trips_ms(self) -> list[float]:
        """Per unit: `response.listen` arrival minus the release of the append closing it."""
        closed = {
            r.unit_index: r.released_at for r in self.target.releases if r.unit_index is not None
        }
        return [(t - closed[u]) * 1000 for u, t in self.listens if u in closed]


def _no_reconnect() -> bool:
    """`BENCH_NO_RECONNECT=1`: sessions without reconnect/resume (no resend outbox)."""
    return os.environ.get(NO_RECONNECT_ENV, "") not in ("", "0")


def _cpu_s(proc: Any) -> float:
    times = proc.cpu_times()
    return float(times.user + times.system)


async def _connect(url: str, n: int) -> list[Session]:
    from duplex_client import DuplexClient

    gate = asyncio.Semaphore(CONNECT_CONCURRENCY)
    options: dict[str, Any] = {"reconnect": False} if _no_reconnect() else {}

    async def one() -> Session:
        async with gate:
            client = DuplexClient(url, **options)
            await client.connect()
        session = Session(client, TimedTarget(client))
        client.add_listener(session.on_event)
        return session

    return list(await asyncio.gather(*(one() for _ in range(n))))


async def _close(sessions: list[Session]) -> None:
    async def one(s: Session) -> None:
        with contextlib.suppress(Exception):
            await s.client.close()

    await asyncio.gather(*(one(s) for s in sessions))


async def run_level(url: str, server_pid: int, n: int, seconds: int) -> dict[str, Any]:
    """Stream `seconds` on `n` concurrent sessions; returns CPU, lateness and round trips."""
    from duplex_client.client.streaming import stream
    from duplex_client.framing import BytesPcmSource, MediaInput
    from duplex_client.media import ImageFrameSource

    pcm = speech_like_pcm(seconds * 1000)
    frames = ImageFrameSource(camera_image())
    me = psutil().Process()
    rss0 = me.memory_info().rss
    connect_started = time.monotonic()
    sessions = await _connect(url, n)
    connect_s = time.monotonic() - connect_started
    server = psutil().Process(server_pid)
    gc.collect()
    start = time.monotonic() + 0.2
    faults0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    server_faults0 = minor_faults(server_pid)
    cpu0, srv0, all0, wall0 = _cpu_s(me), _cpu_s(server), busy_cpu_s(), time.monotonic()
    steal0 = steal_cpu_s()

    async def one(i: int, s: Session) -> None:
        await asyncio.sleep(max(0.0, start + SPREAD_S * i / n - time.monotonic()))
        source = MediaInput(audio=BytesPcmSource(pcm), frames=frames)
        try:
            result = await stream(s.target, source, realtime=True, chunk_ms=CHUNK_MS, commit=False)
            s.t0 = result.clock.t0
        except Exception as exc:
            s.error = f"{type(exc).__name__}: {exc}"

    await asyncio.gather(*(one(i, s) for i, s in enumerate(sessions)))
    await asyncio.sleep(0.2)  # the last units' response.listen
    cpu1, srv1, all1, wall1 = _cpu_s(me), _cpu_s(server), busy_cpu_s(), time.monotonic()
    steal = steal_cpu_s() - steal0
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults0
    server_faults1 = minor_faults(server_pid)
    rss = me.memory_info().rss
    await _close(sessions)

    late = [x for s in sessions if s.t0 is not None for x in s.target.lateness_ms(s.t0)]
    trips = [x for s in sessions for x in s.round_trips_ms()]
    sends = [x for s in sessions for x in s.target.send_ms()]
    session_s = n * seconds
    client_per_s = (cpu1 - cpu0) / session_s
    wall = wall1 - wall0
    return {
        "n": n,
        "failed": sum(1 for s in sessions if s.error),
        "errors": sorted({s.error for s in sessions if s.error})[:3],
        "connect_s": connect_s,
        "appends": len(late),
        "client_cpu_ms_per_session_s": client_per_s * 1000,
        "client_core_pct": (cpu1 - cpu0) / wall * 100,
        "sessions_per_core": 1 / client_per_s if client_per_s else float("inf"),
        "server_core_pct": (srv1 - srv0) / wall * 100,
        "server_cpu_ms_per_session_s": (srv1 - srv0) / session_s * 1000,
        "steal_core_pct": steal / wall * 100,
        "other_core_pct": max(0.0, (all1 - all0) - (cpu1 - cpu0) - (srv1 - srv0)) / wall * 100,
        "p50": percentile(late, 0.5),
        "p99": percentile(late, 0.99),
        "max": max(late, default=0.0),
        "trip_p50": percentile(trips, 0.5),
        "trip_p99": percentile(trips, 0.99),
        "units": len(trips),
        "rss_growth_mb": (rss - rss0) / 2**20,
        "faults_per_append": faults / max(len(late), 1),
        "server_faults_per_append": (
            None
            if server_faults0 is None or server_faults1 is None
            else (server_faults1 - server_faults0) / max(len(late), 1)
        ),
        "send_p50": percentile(sends, 0.5),
        "send_p99": percentile(sends, 0.99),
        "send_max": max(sends, default=0.0),
    }


def report(results: list[dict[str, Any]], seconds: int, jpeg_bytes: int) -> str:
    """Two Markdown tables (client, server); client cost as a ratio to the first row's."""
    base = results[0]["client_cpu_ms_per_session_s"]
    client_rows = [
        (
            r["n"],
            f"{r['client_cpu_ms_per_session_s']:.2f}",
            f"{r['client_cpu_ms_per_session_s'] / base:.2f}x",
            f"{r['sessions_per_core']:.0f}",
            f"{r['client_core_pct']:.0f}%",
            f"{r['p50']:.1f}",
            f"{r['p99']:.1f}",
            f"{r['max']:.0f}",
            f"{r['send_p99']:.2f}",
            f"{r['rss_growth_mb']:.0f}",
            f"{r['faults_per_append']:.1f}",
            r["failed"],
        )
        for r in results
    ]
    client_headers = (
        "N",
        "client CPU ms per session-s",
        f"vs N={results[0]['n']}",
        "sessions per client core",
        "client CPU (of 1 core)",
        "p50 late (ms)",
        "p99 late (ms)",
        "max late (ms)",
        "send p99 (ms)",
        "RSS growth (MB)",
        "page faults per append",
        "failed",
    )
    server_rows = [
        (
            r["n"],
            f"{r['server_core_pct']:.0f}%",
            f"{r['server_cpu_ms_per_session_s']:.2f}",
            f"{r['trip_p50']:.1f}",
            f"{r['trip_p99']:.1f}",
            f"{r['other_core_pct']:.0f}%",
            f"{r['steal_core_pct']:.0f}%",
            "–"
            if r.get("server_faults_per_append") is None
            else f"{r['server_faults_per_append']:.1f}",
        )
        for r in results
    ]
    server_headers = (
        "N",
        "server CPU (of 1 core)",
        "server CPU ms per session-s",
        "unit round trip p50 (ms)",
        "unit round trip p99 (ms)",
        "other processes' CPU (of 1 core)",
        "hypervisor steal (of 1 core)",
        "server page faults per append",
    )
    head = (
        f"sessions: {seconds} s per session of 200 ms appends + 1 fps 640x480 JPEG "
        f"({jpeg_bytes} B), starts spread over {SPREAD_S:g} s, "
        f"{'reconnect off' if _no_reconnect() else 'default client options'}; {machine()}"
    )
    return (
        head
        + "\n\nclient (this process)\n\n"
        + table(client_headers, client_rows)
        + "\n\nserver (duplex-cli serve, scripted engine)\n\n"
        + table(server_headers, server_rows)
    )


def verdict(results: list[dict[str, Any]]) -> str:
    """Targets: >= 200 sessions per client core with p99 lateness <= 20 ms."""
    lines = []
    for r in results:
        ok = r["sessions_per_core"] >= SESSIONS_PER_CORE_TARGET and r["p99"] <= LATENESS_TARGET_MS
        lines.append(
            f"N={r['n']}: {r['sessions_per_core']:.0f} sessions/core, p99 {r['p99']:.1f} ms "
            f"-> {'meets' if ok else 'misses'} the target (connect {r['connect_s']:.1f} s"
            + (f", {r['failed']} failed: {r['errors']}" if r["failed"] else "")
            + ")"
        )
    top = results[-1]
    if top["server_cpu_ms_per_session_s"] > 0:
        full = 1000 / top["server_cpu_ms_per_session_s"]
        lines.append(
            f"server: {top['server_cpu_ms_per_session_s']:.2f} ms CPU per session-s at "
            f"N={top['n']} -> one server core is used up at about {full:.0f} sessions"
        )
    slow = [r["n"] for r in results if r["trip_p99"] > ROUND_TRIP_SLOW_MS]
    if slow:
        lines.append(
            f"server falls behind (unit round trip p99 > {ROUND_TRIP_SLOW_MS:g} ms) "
            f"from N={slow[0]}"
        )
    return "\n".join(lines)


def _level_in_child(url: str, server_pid: int, n: int, seconds: int) -> dict[str, Any]:
    """Run one level in a fresh client process (its CPU and memory are that level's alone)."""
    args = [sys.executable, "-m", "benchmarks.bench_sessions", "--level"]
    args += [url, str(server_pid), str(n), str(seconds)]
    proc = subprocess.run(args, stdout=subprocess.PIPE, text=True, timeout=seconds * 5 + 180)
    if proc.returncode != 0:
        raise RuntimeError(f"sessions client for N={n} failed with exit code {proc.returncode}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def _level_main(argv: list[str]) -> None:
    """`--level URL SERVER_PID N SECONDS`: one level, a JSON line on stdout."""
    url, pid, n, seconds = argv
    result = asyncio.run(run_level(url, int(pid), int(n), int(seconds)))
    print(json.dumps(result), flush=True)


def run_all(levels: tuple[int, ...], seconds: int) -> list[dict[str, Any]]:
    """Run every level against one server process, each level in a fresh client process."""
    results = []
    with ServerProcess(max_sessions=max(levels) + 10) as server:
        if server.options:
            print(f"server options: {' '.join(server.options)}", flush=True)
        for n in levels:
            result = _level_in_child(server.url, server.pid, n, seconds)
            print(
                f"  N={n}: client {result['client_cpu_ms_per_session_s']:.2f} ms/session-s, "
                f"p99 {result['p99']:.1f} ms, server {result['server_core_pct']:.0f}% of a core",
                flush=True,
            )
            results.append(result)
    return results


def main() -> None:
    """Run the concurrent-sessions benchmark and print the table."""
    quick = quick_mode()
    levels = QUICK_LEVELS if quick else LEVELS
    if os.environ.get(LEVELS_ENV):
        levels = tuple(int(x) for x in os.environ[LEVELS_ENV].split(","))
    seconds = QUICK_SECONDS if quick else STREAM_SECONDS
    results = run_all(levels, seconds)
    from duplex_client.media import ImageFrameSource

    jpeg_bytes = len(ImageFrameSource(camera_image()).image.data)
    print(report(results, seconds, jpeg_bytes))
    print(verdict(results), flush=True)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--level":
        _level_main(sys.argv[2:])
    else:
        main()
