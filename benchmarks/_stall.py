"""The event loop's stalls while N clip streams run, near their ends (bundle writes) and elsewhere.

A loop-lag probe (a task that sleeps 5 ms in a loop and records how late each wake-up is)
runs for the whole of N concurrent `stream_clip` runs in one client process. Wake-ups within
±1 s of any stream's end, where the timeline and bundle files are written, are compared with
the rest. A sampler thread names what stalls the loop: whenever the probe is more than 10 ms
overdue it takes the loop thread's stack (`sys._current_frames`), and each sample counts its
interval of stall time for the innermost duplex_client frames.
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from types import FrameType
from typing import Any

from benchmarks._common import percentile

PROBE_PERIOD_S = 0.005
#: A stall is "near an end" when the probe woke within this many seconds of a stream's end.
END_WINDOW_S = 1.0
#: Wake-ups this long after a stream started (and not near an end) are its start-up (connect,
#: model look-up, probing the clip); the rest of "rest" is the steady state.
START_WINDOW_S = 2.0
#: The sampler takes the loop's stack once the probe is this far overdue.
SAMPLE_OVERDUE_MS = 10.0
SAMPLE_INTERVAL_S = 0.002
#: How much worse the end window may stall than the rest before a write is to blame.
BLAME_MARGIN_MS = 10.0
_PACKAGE = "duplex_client"


class LoopLagProbe:
    """Sleeps `period_s` in a loop and records (woke_at, lateness_ms) for every wake-up."""

    def __init__(self, period_s: float = PROBE_PERIOD_S) -> None:
        self.period_s = period_s
        self.wakes: list[tuple[float, float]] = []
        self.last_wake = time.monotonic()

    async def run(self) -> None:
        """Probe until cancelled."""
        while True:
            due = time.monotonic() + self.period_s
            await asyncio.sleep(self.period_s)
            now = time.monotonic()
            self.wakes.append((now, (now - due) * 1000))
            self.last_wake = now


class StallSampler:
    """A thread that samples the loop thread's stack while the probe is overdue."""

    def __init__(self, probe: LoopLagProbe, loop_thread: int) -> None:
        self.probe = probe
        self.loop_thread = loop_thread
        self.samples: list[tuple[float, str]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bench-stall-sampler", daemon=True)

    def start(self) -> None:
        """Start sampling."""
        self._thread.start()

    def stop(self) -> None:
        """Stop sampling and wait for the thread."""
        self._stop.set()
        self._thread.join(timeout=2.0)

    def _run(self) -> None:
        overdue_s = self.probe.period_s + SAMPLE_OVERDUE_MS / 1000
        while not self._stop.wait(SAMPLE_INTERVAL_S):
            now = time.monotonic()
            if now - self.probe.last_wake < overdue_s:
                continue
            frame = sys._current_frames().get(self.loop_thread)
            if frame is not None:
                self.samples.append((now, where(frame)))


def where(frame: FrameType) -> str:
    """The innermost duplex_client frames (up to 3, outermost first) and the innermost frame."""
    ours: list[str] = []
    innermost = _name(frame)
    f: FrameType | None = frame
    while f is not None and len(ours) < 3:
        if f"/{_PACKAGE}/" in f.f_code.co_filename:
            ours.append(_name(f))
        f = f.f_back
    chain = " > ".join(reversed(ours)) or "(outside duplex_client)"
    return chain if ours and ours[0] == innermost else f"{chain} … {innermost}"


def _name(frame: FrameType) -> str:
    path = frame.f_code.co_filename
    short = path.split(f"/{_PACKAGE}/", 1)[-1] if f"/{_PACKAGE}/" in path else Path(path).name
    return f"{short}:{frame.f_code.co_name}"


def _stats(lags: list[float]) -> dict[str, float]:
    return {
        "wakes": len(lags),
        "max_ms": max(lags, default=0.0),
        "p99_ms": percentile(lags, 0.99),
        "p50_ms": percentile(lags, 0.5),
    }


def summarize(
    wakes: list[tuple[float, float]],
    samples: list[tuple[float, str]],
    ends: Sequence[float],
    starts: Sequence[float] = (),
    window_s: float = END_WINDOW_S,
) -> dict[str, Any]:
    """Stall figures overall, within `window_s` of any end and elsewhere; where they came from.

    "rest" is everything outside the end window; it splits into start-up (`START_WINDOW_S`
    after any start) and steady state.
    """

    def part(t: float) -> str:
        if any(abs(t - e) <= window_s for e in ends):
            return "end_window"
        if any(0 <= t - s <= START_WINDOW_S for s in starts):
            return "start_up"
        return "steady"

    lags: dict[str, list[float]] = {"end_window": [], "start_up": [], "steady": []}
    for t, lag in wakes:
        lags[part(t)].append(lag)
    blame: dict[str, Counter[str]] = {k: Counter() for k in lags}
    for t, at in samples:
        blame[part(t)][at] += 1
    step_ms = SAMPLE_INTERVAL_S * 1000
    end = _stats(lags["end_window"])
    rest = _stats(lags["start_up"] + lags["steady"])
    worse_max, worse_p99 = end["max_ms"] - rest["max_ms"], end["p99_ms"] - rest["p99_ms"]
    return {
        "overall": _stats([lag for _, lag in wakes]),
        "end_window": end,
        "rest": rest,
        "start_up": _stats(lags["start_up"]),
        "steady": _stats(lags["steady"]),
        "end_minus_rest_max_ms": worse_max,
        "end_minus_rest_p99_ms": worse_p99,
        "blame_writes": max(worse_max, worse_p99) > BLAME_MARGIN_MS,
        "where_ms": {
            k: [[name, round(n * step_ms, 1)] for name, n in c.most_common(8)]
            for k, c in blame.items()
        },
    }


async def _streams(
    url: str, clip: Path, n: int, out: Path
) -> tuple[list[Any], list[float], list[float]]:
    """N `stream_clip` runs (starts over one second); when each started and ended (monotonic).

    The runs end as an eval's concurrent items do: their listening reports are built in the
    report process (`report_process`).
    """
    from duplex_client.run.report_process import report_process
    from duplex_client.run.stream import stream_clip

    starts: list[float] = []
    ends: list[float] = []

    async def one(i: int) -> Any:
        await asyncio.sleep(i / n)
        starts.append(time.monotonic())
        try:
            return await stream_clip(
                url, input_video=str(clip), realtime=True, output_dir=out / f"run{i:02d}"
            )
        finally:
            ends.append(time.monotonic())

    async with report_process():
        results = await asyncio.gather(*(one(i) for i in range(n)), return_exceptions=True)
    return list(results), starts, ends


async def _probed(url: str, clip: Path, n: int, out: Path) -> dict[str, Any]:
    probe = LoopLagProbe()
    sampler = StallSampler(probe, threading.get_ident())
    task = asyncio.create_task(probe.run())
    sampler.start()
    try:
        results, starts, ends = await _streams(url, clip, n, out)
        await asyncio.sleep(END_WINDOW_S)  # the window after the last end, probed too
    finally:
        sampler.stop()
        task.cancel()
    from duplex_client.bundle.layout import BundleLayout

    late: list[float] = []
    for i in range(n):
        path = BundleLayout(out / f"run{i:02d}").timeline
        if path.exists():
            rows = json.loads(path.read_text())["appends"]
            late += [float(a["lateness_ms"] or 0.0) for a in rows]
    report = summarize(probe.wakes, sampler.samples, ends, starts)
    report["streams"] = n
    report["failures"] = sum(0 if getattr(r, "ok", False) else 1 for r in results)
    report["send_late_p99_ms"] = percentile(late, 0.99)
    report["send_late_max_ms"] = max(late, default=0.0)
    report["ends_span_s"] = max(ends) - min(ends) if ends else 0.0
    return report


def stall_child(url: str, clip: str, n: int, out: str) -> None:
    """Entry point of the measuring client process (planning off the loop): one JSON line."""
    import duplex_client.client.streaming.run as streaming

    streaming.PLAN_IN_WORKER = True
    import av  # noqa: F401  (loaded before streaming starts, as in the other rows)
    import cv2  # noqa: F401

    import duplex_client.run  # noqa: F401

    print(json.dumps(asyncio.run(_probed(url, Path(clip), n, Path(out)))), flush=True)


def print_report(label: str, r: dict[str, Any], load: str) -> None:
    """The stall table for one measurement, and what to blame if the end window is worse."""
    from benchmarks._common import table

    if "overall" not in r:
        print(f"stall measurement failed: {r.get('errors')}")
        return
    rows = [
        [part, r[part]["wakes"], f"{r[part]['max_ms']:.1f}", f"{r[part]['p99_ms']:.1f}"]
        for part in ("overall", "end_window", "rest", "start_up", "steady")
    ]
    print(f"event-loop stall, {label} N={r['streams']} (load average before: {load})")
    print(table(["part", "probe wake-ups", "max stall (ms)", "p99 stall (ms)"], rows))
    print(
        f"end window (±{END_WINDOW_S:g} s of a stream's end; ends spread over"
        f" {r['ends_span_s']:.1f} s) minus rest: max {r['end_minus_rest_max_ms']:+.1f} ms,"
        f" p99 {r['end_minus_rest_p99_ms']:+.1f} ms;"
        f" send lateness p99 {r['send_late_p99_ms']:.1f} ms, max {r['send_late_max_ms']:.0f} ms;"
        f" failures {r['failures']}"
    )
    for part, top in r["where_ms"].items():
        if top:
            print(f"loop stalled > {SAMPLE_OVERDUE_MS:g} ms in ({part}, sampled ms):")
            for name, ms in top:
                print(f"  {ms:8.1f}  {name}")
    if r["blame_writes"]:
        print(
            f"the end window stalls > {BLAME_MARGIN_MS:g} ms more than the rest (max or p99):"
            " the end-of-stream writes above should move off the loop"
        )
