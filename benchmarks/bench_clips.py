"""Clip streams from one client process: what a stream costs by clip kind, and at scale.

**Clip kinds** (the default run; issue 31): for each kind of `benchmarks._clip_kinds` (720p30
with keyframes every 0.5 s, 1 s on the 1 fps sample times, 1 s off them (29 frames), 2 s and
10 s, each with and without B-frames; 1080p30 and 2160p30 with 29-frame GOPs), all on the same
20 s H.264 + AAC file in the same run: client CPU per stream-second of one
`stream_clip(realtime=True)` against `duplex-cli serve --engine scripted` (client process
CPU over the media seconds sent, after a 2 s warm-up stream has paid the process's one-off
costs: modules imported on first use, the TLS context), the RSS that stream adds, planning
alone (and the audio path's share of it) with its memory, frames decoded against frames
sampled, and the three ffmpeg floors (`-threads 1`, CPU per second of clip: every frame,
keyframes only, exactly the frame at each 1 s sample). The target: client CPU per
stream-second at most 1.2x the exact-frame floor + 8 ms. `BENCH_CLIPS_RUNS` (default 1) runs
each row's streams that many times in the one process and reports the least CPU (every run's
lateness counts). `BENCH_CLIPS_KINDS` picks a set
(`all`, `720p`, `sizes`, `one`) or names kinds; the table is time-boxed by
`BENCH_CLIPS_BUDGET_S` (default 600 s: kinds not started by then are listed). Without the
`ffmpeg` CLI the floors are left out, and the output says so.

**At scale** (`--levels` or `BENCH_CLIPS_LEVELS=1`; issue 16): N concurrent
`stream_clip(realtime=True)` runs of one 20 s 1280x720 30 fps H.264 + AAC clip
(a keyframe every 30 frames, sampled at 1 fps) from one client process, against
`duplex-cli serve --engine scripted --max-sessions N+2` on loopback (N = 1, 8, 16, 32), plus
N = 8 of a 1080p30 clip and one stream of a 2160p30 (4K) clip. Starts are spread over one
second. Each row runs in a fresh client process, once with planning in worker threads (ours)
and once with the inline path (`streaming.run.PLAN_IN_WORKER = False`: decoding and JPEG
encoding on the event loop's thread, as before), in the same run.

Reported per row: send lateness p50/p99/max over every append of every run and drift (the
largest lateness of a run's last append), from the runs' `input_timeline.json`; client CPU
per stream-second (the client process's CPU over the whole child, over N × clip length);
peak RSS and its growth over the child's RSS before streaming; failed runs. Also the cost of
planning alone (framer + decoding + JPEG, no network), one clip in a loop.
Last, the event loop's stall at N = 32 (`benchmarks._stall`): a 5 ms loop-lag probe over the
whole run, max and p99 within ±1 s of any stream's end (where the timeline and bundle files
are written) against the rest, and the loop-thread stacks seen while it stalled.
Clips are generated once into `BENCH_CACHE` (default: a folder in the temp directory).
Run: `python -m benchmarks.bench_clips` (`--quick` or `BENCH_QUICK=1`: a 2 s 360p smoke run of
one kind and of the concurrency table; `--stall` or `BENCH_CLIPS_STALL=1`: only the stall
measurement, N from `BENCH_CLIPS_STALL_N`).
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks import _clip_kinds
from benchmarks._clip_kinds import Kind, plan_child, rss_mb
from benchmarks._common import ServerProcess, machine, percentile, quick_mode, table
from benchmarks._stall import print_report, stall_child
from benchmarks.bench_ingest import peak_rss_mb

#: (label, size, seconds, levels) of the full run.
CLIPS: list[tuple[str, tuple[int, int], int, list[int]]] = [
    ("720p30", (1280, 720), 20, [1, 8, 16, 32]),
    ("1080p30", (1920, 1080), 20, [8]),
    ("2160p30", (3840, 2160), 20, [1]),
]
QUICK_CLIPS: list[tuple[str, tuple[int, int], int, list[int]]] = [
    ("360p30", (640, 360), 2, [2]),
]
KEYINT = 30
MODES = ("ours", "inline")
#: Set to 1 (or pass `--stall`) to run only the event-loop stall measurement.
STALL_ENV = "BENCH_CLIPS_STALL"
STALL_STREAMS = 32
#: Set to 1 (or pass `--levels`) for the concurrency table and stall instead of the kinds.
LEVELS_ENV = "BENCH_CLIPS_LEVELS"


def cache_dir() -> Path:
    """Where generated clips are kept between runs."""
    path = Path(os.environ.get("BENCH_CACHE") or Path(tempfile.gettempdir()) / "duplex-bench")
    path.mkdir(parents=True, exist_ok=True)
    return path


def clip_path(label: str, size: tuple[int, int], seconds: int) -> Path:
    """The cached clip, generated (by repeating a 2 s encoded piece) if it is missing."""
    from benchmarks.bench_ingest import make_clip

    path = cache_dir() / f"clip_{label}_{seconds}s_k{KEYINT}.mp4"
    if not path.exists():
        tmp = path.with_name(f".{path.name}.{os.getpid()}.mp4")
        make_clip(tmp, seconds, size, KEYINT, 2 * KEYINT)
        tmp.replace(path)
    return path


async def _run_level(url: str, clip: Path, n: int, out: Path) -> list[Any]:
    from duplex_client.run.stream import stream_clip

    async def one(i: int) -> Any:
        await asyncio.sleep(i / n)
        return await stream_clip(
            url, input_video=str(clip), realtime=True, output_dir=out / f"run{i:02d}"
        )

    return list(await asyncio.gather(*(one(i) for i in range(n)), return_exceptions=True))


def child(url: str, clip: str, n: int, mode: str, out: str, warm: str = "") -> None:
    """Entry point of one measuring client process: prints one JSON line.

    `warm` names a clip streamed once before measuring, so the process's one-off costs
    (modules imported on first use, the TLS context) are not counted as the streams'.
    """
    import duplex_client.client.streaming.run as streaming

    streaming.PLAN_IN_WORKER = mode == "ours"
    import av  # noqa: F401  (imports before the RSS baseline)
    import cv2  # noqa: F401

    import duplex_client.run  # noqa: F401

    if warm:
        asyncio.run(_run_level(url, Path(warm), 1, Path(out) / "warm"))
    before = rss_mb()
    late: list[float] = []
    drift: list[float] = []
    failures = 0
    cpu_per_s: list[float] = []
    from duplex_client.bundle.layout import BundleLayout

    every: list[Any] = []  # every round's results: an earlier round's error is reported too
    for round_ in range(_clip_kinds.runs()):
        folder = Path(out) / f"round{round_}"
        cpu0 = time.process_time()
        results = asyncio.run(_run_level(url, Path(clip), n, folder))
        cpu = time.process_time() - cpu0
        every += results
        media_s = 0.0
        for i, r in enumerate(results):
            failures += 0 if getattr(r, "ok", False) else 1
            path = BundleLayout(folder / f"run{i:02d}").timeline
            if not path.exists():
                continue
            rows = json.loads(path.read_text())["appends"]
            values = [float(a["lateness_ms"] or 0.0) for a in rows]
            late += values
            drift += values[-1:]
            media_s += max((a["media_end_ms"] for a in rows), default=0) / 1000
        cpu_per_s.append(cpu * 1000 / max(media_s, 1e-9))
    peak = peak_rss_mb()
    print(
        json.dumps(
            {
                "appends": len(late),
                "p50": percentile(late, 0.5),
                "p99": percentile(late, 0.99),
                "max": max(late, default=0.0),
                "drift": max(drift, default=0.0),
                "cpu_ms_per_s": min(cpu_per_s),
                "cpu_ms_per_s_runs": cpu_per_s,
                "peak_rss_mb": peak,
                "rss_growth_mb": peak - before,
                "failures": failures,
                "errors": sorted({str(getattr(r, "error", r))[:80] for r in every if r})[:3]
                if failures
                else [],
            }
        ),
        flush=True,
    )


def measure(
    clip: Path, n: int, mode: str, seconds: int, warm: Path | None = None
) -> dict[str, Any]:
    """One row: a fresh server and a fresh client process (warmed up by `warm` if given)."""
    with ServerProcess(max_sessions=n + 2) as server, tempfile.TemporaryDirectory() as out:
        args = [sys.executable, "-m", "benchmarks.bench_clips", "--child"]
        args += [server.url, str(clip), str(n), mode, out, str(warm or "")]
        proc = subprocess.run(
            args, stdout=subprocess.PIPE, text=True, timeout=seconds * 6 * _clip_kinds.runs() + 120
        )
        lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
        if proc.returncode != 0 or not lines:
            return {"failures": n, "errors": [f"client exited {proc.returncode}"]}
        row: dict[str, Any] = json.loads(lines[-1])
        return row


def stall_mode() -> bool:
    """Whether only the stall measurement was asked for (`BENCH_CLIPS_STALL=1` or `--stall`)."""
    return os.environ.get(STALL_ENV, "") not in ("", "0") or "--stall" in sys.argv[1:]


def measure_stall(clip: Path, n: int, seconds: int) -> dict[str, Any]:
    """The event loop's stalls while N streams run (fresh server and client process)."""
    with ServerProcess(max_sessions=n + 2) as server, tempfile.TemporaryDirectory() as out:
        args = [sys.executable, "-m", "benchmarks.bench_clips", "--stall-child"]
        args += [server.url, str(clip), str(n), out]
        proc = subprocess.run(args, stdout=subprocess.PIPE, text=True, timeout=seconds * 6 + 120)
        lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
        if proc.returncode != 0 or not lines:
            return {"streams": n, "errors": [f"client exited {proc.returncode}"]}
        row: dict[str, Any] = json.loads(lines[-1])
        return row


def run_stall(quick: bool) -> None:
    """The stall measurement (720p30; N = 32, 2 with `--quick`), printed with the load."""
    label, size, seconds, _ = (QUICK_CLIPS if quick else CLIPS)[0]
    raw = os.environ.get("BENCH_CLIPS_STALL_N") or str(STALL_STREAMS)
    if not raw.isdigit() or int(raw) < 1:
        raise SystemExit(f"BENCH_CLIPS_STALL_N must be a positive whole number, got {raw!r}")
    n = 2 if quick else int(raw)
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print_report(label, measure_stall(clip_path(label, size, seconds), n, seconds), load)


def planning_cost(clip: Path, seconds: int) -> float:
    """CPU ms per stream-second of planning alone (framer, decoding, resampling, JPEG)."""
    from duplex_client.framing import Framer, FramerConfig
    from duplex_client.media.clip import open_clip

    with open_clip(clip, fps=1.0) as media:
        cpu0 = time.process_time()
        for _ in Framer(FramerConfig()).plan(media.audio, media.frames):
            pass
        return (time.process_time() - cpu0) * 1000 / seconds


def levels_mode() -> bool:
    """Whether the concurrency table was asked for (`BENCH_CLIPS_LEVELS=1` or `--levels`)."""
    return os.environ.get(LEVELS_ENV, "") not in ("", "0") or "--levels" in sys.argv[1:]


def main() -> None:
    """The clip kinds table; the concurrency table and stall with `--levels` (both if quick)."""
    quick = quick_mode()
    # what planning costs is measured, so no child may be served from the plan cache that an
    # earlier run (or another benchmark) filled with the same clip (`DUPLEX_PLAN_CACHE=on` to
    # measure warm runs)
    os.environ.setdefault("DUPLEX_PLAN_CACHE", "off")
    print(f"machine: {machine()}")
    if stall_mode():
        run_stall(quick)
        return
    if not levels_mode() or quick:
        run_kinds(quick)
    if levels_mode() or quick:
        run_levels(quick)


def run_kinds(quick: bool) -> None:
    """For each clip kind, on the same file: one stream, planning alone, the ffmpeg floors."""
    kinds = _clip_kinds.selected(quick)
    budget = _clip_kinds.budget_s()
    missing = _clip_kinds.ffmpeg_missing()
    started = time.perf_counter()
    rows: list[list[object]] = []
    skipped: list[str] = []
    for kind in kinds:
        if time.perf_counter() - started > budget:
            skipped.append(kind.name)
            continue
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
        r = measure_kind(kind, missing)
        rows.append(_kind_row(kind, r))
        took = time.perf_counter() - started
        print(f"  {kind.name} (load {load}): {json.dumps(r)} ({took:.0f} s so far)", flush=True)
    headers = ["kind", "client CPU ms per stream-s", "planning alone", "audio share"]
    headers += ["ffmpeg every frame", "keyframes only", "exact frames", "target", "met"]
    headers += ["RSS per stream (MB)", "planning RSS (MB)", "decoded / sampled", "late p99 (ms)"]
    print(table(headers, rows))
    print(
        "target: client CPU per stream-s <= 1.2 x the exact-frame floor + 8 ms on every kind"
        " (ffmpeg -threads 1, CPU ms per second of clip; exact: one accurate -ss t -frames:v 1"
        " per 1 s sample, start-up subtracted)"
    )
    if missing:
        print(f"NOTE: {missing}")
    if skipped:
        print(f"NOTE: time box of {budget:.0f} s ({_clip_kinds.BUDGET_ENV}) reached; not run:")
        print("  " + ", ".join(skipped))
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


def measure_kind(kind: Kind, ffmpeg_missing: str | None) -> dict[str, Any]:
    """One kind: its clip's one-stream run, planning alone and ffmpeg floors."""
    path = _clip_kinds.kind_clip(kind, cache_dir())
    seconds = _clip_kinds.video_seconds(path)
    r: dict[str, Any] = {"video_s": seconds}
    warm = clip_path("warm", (64, 48), 1)  # a 2 s clip: the process's one-off costs first
    r.update(measure(path, 1, "ours", kind.seconds, warm))
    r.update(_clip_kinds.measure_plan(path))
    if ffmpeg_missing is None:
        r.update(_clip_kinds.ffmpeg_floors(path, seconds))
    return r


def _kind_row(kind: Kind, r: dict[str, Any]) -> list[object]:
    def ms(key: str) -> str:
        return f"{r[key]:.1f}" if key in r else "–"

    target = 1.2 * r["exact_ms_per_s"] + 8 if "exact_ms_per_s" in r else None
    client = r.get("cpu_ms_per_s")
    met = "–" if target is None or client is None else ("yes" if client <= target else "**no**")
    share = r["audio_ms_per_s"] / r["plan_ms_per_s"] if r.get("plan_ms_per_s") else None
    samples = math.ceil(r.get("video_s", 0))
    return [
        kind.label,
        ms("cpu_ms_per_s"),
        ms("plan_ms_per_s"),
        "–" if share is None else f"{share:.0%}",
        ms("every_ms_per_s"),
        ms("keys_ms_per_s"),
        ms("exact_ms_per_s"),
        "–" if target is None else f"{target:.1f}",
        met,
        ms("rss_growth_mb"),
        ms("plan_rss_mb"),
        f"{r.get('decoded', '–')} / {samples}",
        ms("p99"),
    ]


def run_levels(quick: bool) -> None:
    """Every concurrency row for both modes, then the stall measurement."""
    clips = QUICK_CLIPS if quick else CLIPS
    rows: list[list[object]] = []
    plan_rows: list[list[object]] = []
    for label, size, seconds, levels in clips:
        path = clip_path(label, size, seconds)
        plan_rows.append([label, f"{planning_cost(path, seconds):.1f}"])
        for n in levels:
            for mode in MODES:
                started = time.perf_counter()
                r = measure(path, n, mode, seconds)
                took = time.perf_counter() - started
                rows.append(_row(label, n, mode, r))
                print(f"  {label} N={n} {mode}: {json.dumps(r)} ({took:.0f} s)", flush=True)
    headers = ["clip", "N", "planning", "late p50 / p99 / max (ms)", "drift (ms)"]
    headers += ["client CPU ms per stream-s", "peak RSS (MB)", "RSS growth (MB)", "failures"]
    print(table(headers, rows))
    print()
    print(table(["clip", "planning alone: CPU ms per stream-s"], plan_rows))
    print(
        "targets: <= 10 ms client CPU per stream-s (720p30, 1 fps); N = 32: p99 <= 10 ms,"
        " drift <= 5 ms, 0 failures, RSS growth <= 300 MB; one 4K stream: p99 <= 5 ms"
    )
    print()
    run_stall(quick)


def _row(label: str, n: int, mode: str, r: dict[str, Any]) -> list[object]:
    if "p99" not in r:
        return [label, n, mode, "–", "–", "–", "–", "–", r.get("failures", n)]
    return [
        label,
        n,
        mode,
        f"{r['p50']:.1f} / {r['p99']:.1f} / {r['max']:.0f}",
        f"{r['drift']:.1f}",
        f"{r['cpu_ms_per_s']:.1f}",
        f"{r['peak_rss_mb']:.0f}",
        f"{r['rss_growth_mb']:.0f}",
        r["failures"],
    ]


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5], sys.argv[6], sys.argv[7])
    elif len(sys.argv) > 1 and sys.argv[1] == "--plan-child":
        plan_child(sys.argv[2])
    elif len(sys.argv) > 1 and sys.argv[1] == "--stall-child":
        stall_child(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5])
    else:
        main()
