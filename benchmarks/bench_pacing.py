"""Pacing accuracy: our media-clock pacing against the naive sleep-after-send loop.

Streams 60 s of 16 kHz PCM in 200 ms appends with one 640x480 JPEG per 1 s unit (1 fps) to
the reference server (`duplex-cli serve`, its own process) on loopback, in real time, and
records when each append is released against its media deadline `t0 + media_end_ms`.

- ours: `duplex_client.client.streaming.stream(realtime=True)`: absolute deadlines from one
  media clock (protocol.md §10).
- naive: the same appends, each followed by `asyncio.sleep(its duration)` after the send
  (an `asap` stream whose target sleeps), so every send cost and sleep overshoot adds up.

Both run with 0 and 5 ms of simulated send cost (a busy-wait after each send, holding the
event loop). The four streams run at the same time, each in its own client process, so the
benchmark takes one minute (`BENCH_PACING_SEQUENTIAL=1` runs them one after another).

A second group paces PersonaPlex-style input: 80 ms units (`serve --profile personaplex`),
24 kHz `pcm_f32le` PCM, one 80 ms append per unit and no frames, so 750 appends in 60 s;
its baseline is the timer floor at the same 80 ms deadlines. `BENCH_PACING_GROUPS=200,80`
(the default) picks the groups; they run one after the other.
Run: `python -m benchmarks.bench_pacing` (`--quick` or `BENCH_QUICK=1`: 2 s smoke run).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import subprocess
import sys
import time
from typing import Any

from benchmarks._common import (
    ServerProcess,
    TimedTarget,
    busy_cpu_s,
    camera_image,
    machine,
    percentile,
    quick_mode,
    speech_like_pcm,
    steal_cpu_s,
    table,
)

STREAM_SECONDS = 60
QUICK_SECONDS = 2
CHUNK_MS = 200
SEND_COSTS_MS = (0, 5)
PACINGS = ("ours", "naive")
LABELS = {
    "floor": "timer floor (asyncio.sleep, no sends)",
    "ours": "ours (media clock)",
    "naive": "naive (sleep after send)",
}
#: Workers import, connect, then wait for a common start (staggered so sends do not collide).
START_DELAY_S = 4.0
QUICK_START_DELAY_S = 2.5
STAGGER_S = 0.05
SEQUENTIAL_ENV = "BENCH_PACING_SEQUENTIAL"
TARGET_MS = 5.0
#: The PersonaPlex-style group: 80 ms units and appends, 24 kHz float32, no frames.
UNIT80_MS = 80
GROUPS_ENV = "BENCH_PACING_GROUPS"
#: Variants per group (pacing, send cost in ms); the 80 ms group keeps one naive stream.
GROUP_VARIANTS: dict[int, list[tuple[str, float]]] = {
    CHUNK_MS: [("floor", 0.0), *((p, float(c)) for c in SEND_COSTS_MS for p in PACINGS)],
    UNIT80_MS: [("floor", 0.0), ("ours", 0.0), ("ours", 5.0), ("naive", 0.0)],
}


def float_pcm(ms: int, rate: int = 24000, seed: int = 0) -> bytes:
    """`ms` of mono float32 LE PCM at `rate`: a gliding tone with noise (the 80 ms group)."""
    import numpy as np

    n = rate * ms // 1000
    t = np.arange(n) / rate
    rng = np.random.default_rng(seed)
    wave = 0.18 * np.sin(2 * np.pi * (180 + 40 * np.sin(t)) * t) + rng.normal(0, 0.01, n)
    return wave.astype("<f4").tobytes()


def _stats(pacing: str, cost_ms: float, late: list[float], **extra: Any) -> dict[str, Any]:
    return {
        "pacing": pacing,
        "cost_ms": cost_ms,
        "appends": len(late),
        "p50": percentile(late, 0.5),
        "p99": percentile(late, 0.99),
        "max": max(late),
        "min": min(late),
        "drift": late[-1],
        **extra,
    }


async def timer_floor(seconds: int, start_at: float, chunk_ms: int = CHUNK_MS) -> dict[str, Any]:
    """The event loop's own timer accuracy: `asyncio.sleep` to the same deadlines, no sends."""
    await asyncio.sleep(max(0.0, start_at - time.time()))
    t0 = time.monotonic()
    late = []
    for k in range(seconds * 1000 // chunk_ms):
        deadline = t0 + k * chunk_ms / 1000
        while (wait := deadline - time.monotonic()) > 1e-6:
            await asyncio.sleep(wait)
        late.append((time.monotonic() - deadline) * 1000)
    return _stats("floor", 0, late)


async def run_stream(
    url: str, pacing: str, cost_ms: float, seconds: int, start_at: float, chunk_ms: int = CHUNK_MS
) -> Any:
    """Stream `seconds` of input with one pacing; returns the lateness stats.

    200 ms group: 16 kHz PCM + 1 fps frames; 80 ms group: the PersonaPlex preset's 24 kHz
    float32 PCM on the server's 80 ms units, no frames.
    """
    if pacing == "floor":
        return await timer_floor(seconds, start_at, chunk_ms)
    from duplex_client import DuplexClient, presets
    from duplex_client.client.streaming import stream
    from duplex_client.framing import BytesPcmSource, MediaInput
    from duplex_client.media import ImageFrameSource

    frames = None if chunk_ms == UNIT80_MS else ImageFrameSource(camera_image())
    if frames is None:
        config = presets.personaplex()
        pcm = BytesPcmSource(float_pcm(seconds * 1000), chunk_bytes=96000)
    else:
        config, pcm = None, BytesPcmSource(speech_like_pcm(seconds * 1000))
    source = MediaInput(audio=pcm, frames=frames)
    async with DuplexClient(url, config=config) as client:
        target = TimedTarget(client, send_cost_s=cost_ms / 1000, naive_sleep=pacing == "naive")
        await asyncio.sleep(max(0.0, start_at - time.time()))
        result = await stream(
            target, source, realtime=pacing == "ours", chunk_ms=chunk_ms, commit=False
        )
        late = target.lateness_ms(result.clock.t0)
        units = client.capabilities.chunk_period_ms
    return _stats(
        pacing,
        cost_ms,
        late,
        frames=sum(1 for r in target.releases if r.unit_index is not None),
        jpeg_bytes=len(frames.image.data) if frames is not None else 0,
        media_s=result.media_end_ms / 1000,
        unit_ms=units,
        units=sum(1 for r in target.releases if r.unit_index is not None),
    )


def _worker(argv: list[str]) -> None:
    """`--worker PACING COST_MS URL SECONDS START_AT CHUNK_MS`: one stream, a JSON line."""
    pacing, cost, url, seconds, start_at, chunk = argv
    stats = asyncio.run(
        run_stream(url, pacing, float(cost), int(seconds), float(start_at), int(chunk))
    )
    print(json.dumps(stats), flush=True)


def _spawn(
    url: str, pacing: str, cost_ms: float, seconds: int, start_at: float, chunk_ms: int
) -> Any:
    args = [sys.executable, "-m", "benchmarks.bench_pacing", "--worker"]
    args += [pacing, str(cost_ms), url, str(seconds), repr(start_at), str(chunk_ms)]
    return subprocess.Popen(args, stdout=subprocess.PIPE, text=True)


def _collect(proc: subprocess.Popen[str], seconds: int) -> dict[str, Any]:
    out, _ = proc.communicate(timeout=seconds * 3 + 120)
    if proc.returncode != 0:
        raise RuntimeError(f"pacing worker failed with exit code {proc.returncode}")
    stats: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return stats


def run_all(
    url: str,
    seconds: int,
    sequential: bool,
    delay: float = START_DELAY_S,
    chunk_ms: int = CHUNK_MS,
) -> list[dict[str, Any]]:
    """Run every (pacing, send cost) stream: concurrently (default) or one after another."""
    variants = GROUP_VARIANTS[chunk_ms]
    if sequential:
        results = []
        for pacing, cost in variants:
            proc = _spawn(url, pacing, cost, seconds, time.time() + delay, chunk_ms)
            results.append(_collect(proc, seconds))
        return results
    start = time.time() + delay
    procs = [
        _spawn(url, pacing, cost, seconds, start + i * STAGGER_S, chunk_ms)
        for i, (pacing, cost) in enumerate(variants)
    ]
    return [_collect(p, seconds) for p in procs]


def report(
    results: list[dict[str, Any]], seconds: int, sequential: bool, chunk_ms: int = CHUNK_MS
) -> str:
    """The Markdown table of lateness and drift per (pacing, send cost)."""
    rows = []
    for r in results:
        rows.append(
            (
                LABELS[r["pacing"]],
                "-" if r["pacing"] == "floor" else f"{r['cost_ms']:g} ms",
                r["appends"],
                f"{r['p50']:.2f}",
                f"{r['p99']:.2f}",
                f"{r['max']:.2f}",
                f"{r['drift']:.1f}",
            )
        )
    what = (
        f"200 ms appends of 16 kHz PCM + 1 fps 640x480 JPEG "
        f"({max(r.get('jpeg_bytes', 0) for r in results)} B)"
        if chunk_ms == CHUNK_MS
        else f"{chunk_ms} ms units of 24 kHz pcm_f32le (personaplex), one append each, no frames"
    )
    head = (
        f"pacing: {seconds} s of {what}, "
        f"{'sequential' if sequential else 'concurrent'} "
        f"streams; {machine()}"
    )
    headers = (
        "pacing",
        "send cost",
        "appends",
        "p50 late (ms)",
        "p99 late (ms)",
        "max late (ms)",
        "drift at end (ms)",
    )
    return head + "\n\n" + table(headers, rows)


def verdict(results: list[dict[str, Any]]) -> str:
    """Targets: ours p99 and end drift within 5 ms; naive drift growing with the send cost."""
    floor = [r for r in results if r["pacing"] == "floor"]
    ours = {r["cost_ms"]: r for r in results if r["pacing"] == "ours"}
    naive = {r["cost_ms"]: r for r in results if r["pacing"] == "naive"}
    lines = []
    if floor:
        lines.append(
            f"timer floor of this machine: p99 {floor[0]['p99']:.2f} ms, "
            f"max {floor[0]['max']:.2f} ms (asyncio.sleep alone)"
        )
    for cost in sorted(ours):
        o, n = ours[cost], naive.get(cost)
        ok = o["p99"] <= TARGET_MS and abs(o["drift"]) <= TARGET_MS
        if n is None:
            lines.append(
                f"send cost {cost:g} ms: ours p99 {o['p99']:.2f} ms, drift {o['drift']:.1f} ms "
                f"over {o['appends']} appends ({'meets' if ok else 'MISSES'} the 5 ms target; "
                f"p99 {o['p99'] / max(floor[0]['p99'], 0.001) if floor else 0:.2f}x the floor)"
            )
            continue
        lines.append(
            f"send cost {cost:g} ms: ours p99 {o['p99']:.2f} ms, drift {o['drift']:.1f} ms "
            f"({'meets' if ok else 'MISSES'} the 5 ms target); naive p99 {n['p99']:.1f} ms "
            f"({n['p99'] / max(o['p99'], 0.001):.0f}x ours), drift {n['drift']:.0f} ms "
            f"({n['drift'] / max(n['appends'], 1):.2f} ms per append)"
        )
    costs = sorted(naive)
    grows = all(naive[a]["drift"] < naive[b]["drift"] for a, b in itertools.pairwise(costs))
    if len(costs) > 1:
        lines.append(f"naive drift {'grows' if grows else 'does NOT grow'} with the send cost")
    elif costs:
        alone, mine = naive[costs[0]], ours.get(costs[0])
        ratio = f" ({alone['drift'] / max(abs(mine['drift']), 0.1):.0f}x ours)" if mine else ""
        lines.append(
            f"naive (sleep after send), {costs[0]:g} ms cost: p99 {alone['p99']:.1f} ms, "
            f"drift {alone['drift']:.0f} ms over {alone['appends']} appends{ratio}"
        )
    return "\n".join(lines)


def run_group(chunk_ms: int, seconds: int, sequential: bool, delay: float) -> None:
    """One group's streams against its own server; prints its table, load and verdict."""
    if chunk_ms == UNIT80_MS:
        server = ServerProcess(
            max_sessions=len(GROUP_VARIANTS[chunk_ms]) + 2, profile="personaplex"
        )
    else:
        server = ServerProcess(max_sessions=len(PACINGS) * len(SEND_COSTS_MS) + 2)
    with server:
        busy0, steal0, wall0 = busy_cpu_s(), steal_cpu_s(), time.monotonic()
        results = run_all(server.url, seconds, sequential, delay, chunk_ms)
        wall = time.monotonic() - wall0
        busy = (busy_cpu_s() - busy0) / wall * 100
        steal = (steal_cpu_s() - steal0) / wall * 100
    print(report(results, seconds, sequential, chunk_ms))
    print(
        f"machine busy during the run: {busy:.0f}% of one core (all processes, ours included); "
        f"hypervisor steal: {steal:.0f}% of one core"
    )
    print(verdict(results), flush=True)


def main() -> None:
    """Run the pacing benchmark's groups (`BENCH_PACING_GROUPS`) and print their tables."""
    quick = quick_mode()
    seconds = QUICK_SECONDS if quick else STREAM_SECONDS
    delay = QUICK_START_DELAY_S if quick else START_DELAY_S
    sequential = os.environ.get(SEQUENTIAL_ENV, "") not in ("", "0")
    wanted = os.environ.get(GROUPS_ENV, f"{CHUNK_MS},{UNIT80_MS}")
    groups = [g for g in (CHUNK_MS, UNIT80_MS) if str(g) in wanted.replace(" ", "").split(",")]
    for n, chunk_ms in enumerate(groups):
        if n:
            print()
        run_group(chunk_ms, seconds, sequential, delay)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        _worker(sys.argv[2:])
    else:
        main()
