"""Eval throughput: 64 items through `run_eval_async` at concurrency 1, 8 and 32.

The items are 10 s clips of speech (eSpeak NG, the reference server's TTS, or a speech-like
synthetic signal when it is missing) with 1 fps 640x480 frames, H.264 + AAC in mp4; one clip
is generated once into `BENCH_CACHE` (default: a folder in the temp directory) and hard-linked
under 64 names in a directory, which is the eval's input. Each level runs in a fresh client
process (`run_eval_async(dir, urls=[url], concurrency=N)`) against its own
`duplex-cli serve --engine scripted` process on loopback (answering mid-clip, listening at
the commit), so the server's CPU is not the client's.

Reported per level: items per minute; achieved throughput against the ideal (64 x clip seconds
/ N of wall time); the median item duration (`duration_s`: connect to close, so the tail
silence, the answer's playback and the settle wait are in it) and the slot use (the items'
summed durations over N x wall time: how busy the runner kept its N slots); client CPU per
item (the client process's user + sys CPU over the eval, its report process's included, / 64);
the server's and the rest of the machine's CPU; timing-invalid items and failures (from
`EvalResult.summary`); the items' send lateness p99 (median and max over the summary rows) and
the largest end drift.
Target: at N = 32, >= 90 % of the ideal with every item timing-valid.
Run: `python -m benchmarks.bench_eval` (about 14 minutes, 11 of them at N = 1);
`BENCH_EVAL_MODE=video720` or `audio256`: issue 31's admission modes instead (`_eval_modes`);
`BENCH_EVAL_LEVELS=32` picks levels, `BENCH_EVAL_TAIL_S` sets the tail
silence; `--quick` or `BENCH_QUICK=1`: 4 items of 2 s at N = 2 and 4 (about 30 s).
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks._common import (
    ServerProcess,
    busy_cpu_s,
    machine,
    percentile,
    psutil,
    quick_mode,
    steal_cpu_s,
    table,
)
from benchmarks.bench_eval.items import (
    AUDIO_RATE_HZ as AUDIO_RATE_HZ,
)
from benchmarks.bench_eval.items import (
    SIZE as SIZE,
)
from benchmarks.bench_eval.items import (
    clip_source as clip_source,
)
from benchmarks.bench_eval.items import (
    items_dir as items_dir,
)
from benchmarks.bench_eval.items import (
    linked_items as linked_items,
)
from benchmarks.bench_eval.items import (
    speech_track as speech_track,
)
from benchmarks.bench_eval.items import (
    write_clip as write_clip,
)

LEVELS_ENV = "BENCH_EVAL_LEVELS"
TAIL_ENV = "BENCH_EVAL_TAIL_S"
DEFAULT_TAIL_S = 0.0
#: The model answers mid-clip (as a duplex model does while the user goes on) and listens at
#: the commit, so an item lasts its clip plus the handshake and the settle wait, which is
#: what the ideal (64 x clip seconds / N) can be compared with.
SCRIPT: dict[str, Any] = {
    "rules": [
        {"on": "unit", "index": 3, "do": "speak", "audio_ms": 1500, "text": "an answer"},
        {"on": "commit", "do": "listen"},
    ],
    "defaults": {"unit": {"do": "listen"}},
}
#: The level the target is judged at, and its bar.
TARGET_LEVEL = 32
TARGET_OF_IDEAL = 0.90
#: How much of an item's media counts as its start (and its end) for where lateness fell.
PHASE_MS = 2000


@dataclass(frozen=True, slots=True)
class Plan:
    """What one run measures: how many items of how many seconds, at which levels."""

    items: int
    seconds: int
    levels: tuple[int, ...]
    tail_s: float


def _from_env(name: str, parse: Callable[[str], Any], ok: Callable[[Any], bool], what: str) -> Any:
    """The parsed value of environment variable `name` (None when unset); exits when bad."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return None
    try:
        value = parse(raw)
    except ValueError:
        value = None
    if value is None or not ok(value):
        raise SystemExit(f"{name} must be {what}, got {raw!r}")
    return value


def plan(quick: bool) -> Plan:
    """The full or quick plan, with `BENCH_EVAL_LEVELS` / `BENCH_EVAL_TAIL_S` applied."""
    levels = _from_env(
        LEVELS_ENV,
        lambda raw: tuple(int(part) for part in raw.split(",")),
        lambda value: min(value) >= 1,
        "comma-separated positive integers",
    )
    tail = _from_env(TAIL_ENV, float, lambda v: 0 <= v <= 60, "a number of seconds in 0..60")
    tail = DEFAULT_TAIL_S if tail is None else tail
    if quick:
        return Plan(4, 2, levels or (2, 4), tail)
    return Plan(64, 10, levels or (1, 8, 32), tail)


def child(url: str, folder: str, n: int, out: str, tail_s: float) -> None:
    """Entry point of one measuring client process: runs the eval, prints one JSON line."""
    import av  # noqa: F401  (imported before the CPU window, as a warm eval process has it)
    import cv2  # noqa: F401

    import duplex_client.run  # noqa: F401
    from duplex_client.eval import run_eval_async

    # the client's CPU is its own and its children's: the report process of concurrent items
    before = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    started = time.perf_counter()
    result = asyncio.run(
        run_eval_async(folder, output_dir=out, urls=[url], concurrency=n, tail_silence_s=tail_s)
    )
    wall = time.perf_counter() - started
    after = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    pairs = zip(after, before, strict=True)
    cpu = sum(a.ru_utime - b.ru_utime + a.ru_stime - b.ru_stime for a, b in pairs)
    figures = digest(result.summary, result.rows)
    figures["late_phases"] = late_phases(Path(out), result.rows, figures["max_lateness_ms"])
    figures["admission"] = result.summary.get("admission")
    print(json.dumps({"wall_s": wall, "cpu_s": cpu, "exit_code": result.exit_code, **figures}))


def late_phases(out: Path, rows: list[dict[str, Any]], limit: float) -> dict[str, int]:
    """Appends later than `limit` by where in the item's media they fell.

    "start": the first `PHASE_MS` of media, "end": the last `PHASE_MS` (tail silence
    included), "middle": the rest; read from each item's `input_timeline.json`.
    """
    from duplex_client.bundle.layout import BundleLayout

    counts = {"start": 0, "middle": 0, "end": 0}
    for row in rows:
        path = BundleLayout(out / str(row["bundle"])).timeline
        if not path.exists():
            continue
        appends = json.loads(path.read_text(encoding="utf-8")).get("appends") or []
        last = max((int(a["media_end_ms"]) for a in appends), default=0)
        for a in appends:
            if float(a.get("lateness_ms") or 0.0) > limit:
                at = int(a["media_start_ms"])
                phase = "start" if at < PHASE_MS else "end" if at >= last - PHASE_MS else "middle"
                counts[phase] += 1
    return counts


def digest(summary: dict[str, Any], rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The figures of one eval taken from its aggregate and summary rows."""
    limit = float(summary["max_lateness_ms"])
    p99s = [float(r["lateness_p99_ms"]) for r in rows if r.get("lateness_p99_ms") is not None]
    drifts = [abs(float(r["drift_ms"])) for r in rows if r.get("drift_ms") is not None]
    durations = [float(r["duration_s"]) for r in rows if r.get("duration_s") is not None]
    errors = sorted({str(r.get("error"))[:100] for r in rows if not r.get("ok")})
    return {
        "items": int(summary["items"]),
        "ok": int(summary["ok"]),
        "failed": int(summary["failed"]),
        "timing_valid": int(summary["timing_valid"]),
        "timing_invalid": int(summary["timing_invalid"]),
        "max_lateness_ms": limit,
        "late_p99_median": percentile(p99s, 0.5),
        "late_p99_max": max(p99s, default=0.0),
        "over_lateness": sum(1 for v in p99s if v > limit),
        "drift_max": max(drifts, default=0.0),
        "over_drift": sum(1 for v in drifts if v > limit),
        "retried": sum(1 for r in rows if int(r.get("attempts") or 1) > 1),
        "duration_p50": percentile(durations, 0.5),
        "duration_sum": sum(durations),
        "errors": errors[:3],
    }


def _cpu_s(proc: Any) -> float:
    times = proc.cpu_times()
    return float(times.user + times.system)


def measure(folder: Path, p: Plan, n: int, timeout_s: float | None = None) -> dict[str, Any]:
    """One level: a fresh server and a fresh client process running the whole eval."""
    with (
        ServerProcess(max_sessions=max(40, n + 8), script=SCRIPT) as server,
        tempfile.TemporaryDirectory(prefix="bench-eval-") as out,
    ):
        srv = psutil().Process(server.pid)
        srv0, busy0, steal0 = _cpu_s(srv), busy_cpu_s(), steal_cpu_s()
        kids0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        wall0 = time.monotonic()
        args = [sys.executable, "-m", "benchmarks.bench_eval", "--child", server.url]
        args += [str(folder), str(n), out, str(p.tail_s)]
        timeout = timeout_s or p.items * (p.seconds + p.tail_s + 5) / n + 180
        proc = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
        wall = time.monotonic() - wall0
        kids1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        srv1, busy1, steal1 = _cpu_s(srv), busy_cpu_s(), steal_cpu_s()
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = proc.stderr.strip().splitlines()[-1:] or [""]
        return {"failed": p.items, "errors": [f"client exited {proc.returncode}: {tail[0][:200]}"]}
    row: dict[str, Any] = json.loads(lines[-1])
    client_all = (kids1.ru_utime - kids0.ru_utime) + (kids1.ru_stime - kids0.ru_stime)
    server_cpu = srv1 - srv0
    row["server_share"] = server_cpu / wall
    row["client_share"] = row["cpu_s"] / row["wall_s"]
    row["other_share"] = max(0.0, busy1 - busy0 - server_cpu - client_all) / wall
    row["steal_share"] = (steal1 - steal0) / wall
    return row


# --- report ------------------------------------------------------------------------------


def ideal_s(p: Plan, n: int) -> float:
    """The ideal wall time of a level: every slot busy streaming clip seconds, nothing else."""
    return p.items * p.seconds / n


def row_cells(p: Plan, n: int, r: dict[str, Any]) -> list[object]:
    """One table row for level `n`."""
    if "wall_s" not in r:
        return [n, p.items, *["–"] * 11, r.get("failed", p.items), "–", "–"]
    wall = float(r["wall_s"])
    return [
        n,
        r["items"],
        f"{wall:.1f}",
        f"{r['items'] * 60 / wall:.1f}",
        f"{100 * ideal_s(p, n) / wall:.1f} %",
        f"{r['duration_p50']:.1f}",
        f"{100 * r['duration_sum'] / (n * wall):.0f} %",
        f"{1000 * r['cpu_s'] / max(r['items'], 1):.0f}",
        f"{100 * r['client_share']:.0f} %",
        f"{100 * r['server_share']:.0f} %",
        f"{100 * r['other_share']:.0f} % / {100 * r['steal_share']:.0f} %",
        r["timing_invalid"],
        r["items"] - r["timing_valid"] - r["timing_invalid"],
        r["failed"],
        f"{r['late_p99_median']:.1f} / {r['late_p99_max']:.1f}",
        f"{r['drift_max']:.1f}",
    ]


HEADERS = [
    "N", "items", "wall (s)", "items per min", "of ideal", "item duration p50 (s)", "slot use",
    "client CPU ms per item", "client CPU (of 1 core)", "server CPU (of 1 core)",
    "other / steal (of 1 core)", "timing-invalid", "not judged", "failures",
    "item lateness p99: median / max (ms)", "drift max (ms)",
]  # fmt: skip


def verdict(p: Plan, results: dict[int, dict[str, Any]]) -> str:
    """The target line: MET, MISSED with its causes, or not measured."""
    goal = (
        f"target (N = {TARGET_LEVEL}): >= {TARGET_OF_IDEAL:.0%} of the ideal throughput "
        f"with every item timing-valid"
    )
    r = results.get(TARGET_LEVEL)
    if r is None:
        return f"{goal}: not measured (N = {TARGET_LEVEL} was not run)"
    if "wall_s" not in r:
        return f"{goal}: MISSED (the client failed: {'; '.join(r.get('errors', []))})"
    causes = []
    share = ideal_s(p, TARGET_LEVEL) / float(r["wall_s"])
    if share < TARGET_OF_IDEAL:
        after = float(r["duration_p50"]) - p.seconds - p.tail_s
        slots = float(r["duration_sum"]) / (TARGET_LEVEL * float(r["wall_s"]))
        causes.append(
            f"throughput: {share:.1%} of ideal; an item takes {r['duration_p50']:.1f} s "
            f"(median) for {p.seconds} s of clip: {p.tail_s:g} s of tail silence, then "
            f"{after:.1f} s after the media (the answer's playback, the settle wait, connect "
            f"and close); the slots were busy {slots:.0%} of the time"
        )
    if r["failed"]:
        causes.append(f"{r['failed']} item(s) failed ({'; '.join(r['errors'])})")
    limit = r["max_lateness_ms"]
    if r["over_lateness"]:
        where = ", ".join(f"{k} {v}" for k, v in r["late_phases"].items())
        causes.append(
            f"lateness: {r['over_lateness']} item(s) with send lateness p99 > {limit:g} ms "
            f"(max {r['late_p99_max']:.1f} ms; appends over {limit:g} ms by media position, "
            f"first / last {PHASE_MS // 1000} s: {where})"
        )
    if r["over_drift"]:
        causes.append(
            f"drift: {r['over_drift']} item(s) ended > {limit:g} ms behind "
            f"(max {r['drift_max']:.1f} ms)"
        )
    unjudged = r["items"] - r["timing_valid"] - r["timing_invalid"]
    if unjudged:
        causes.append(f"{unjudged} item(s) without timing to judge")
    if not causes:
        return f"{goal}: MET ({share:.1%} of ideal, {r['items']} items timing-valid)"
    return f"{goal}: MISSED: " + "; ".join(causes)


def main() -> None:
    """Generate (or reuse) the items, run every level and print the table and the target."""
    from benchmarks import _eval_modes

    # what planning costs is measured, so no child may be served from the plan cache that an
    # earlier run (or another benchmark) filled with the same clip (`DUPLEX_PLAN_CACHE=on` to
    # measure warm runs)
    os.environ.setdefault("DUPLEX_PLAN_CACHE", "off")

    chosen = _eval_modes.mode()
    if chosen is not None:  # issue 31's admission modes instead of the levels
        _eval_modes.run_mode(chosen)
        return
    p = plan(quick_mode())
    print(f"machine: {machine()}")
    folder = items_dir(p.items, p.seconds)
    print(
        f"items: {p.items} x {p.seconds} s, {SIZE[0]}x{SIZE[1]} at 1 fps, speech: "
        f"{clip_source(p.seconds)}; tail silence {p.tail_s:g} s; {folder}",
        flush=True,
    )
    results: dict[int, dict[str, Any]] = {}
    for n in p.levels:
        started = time.perf_counter()
        results[n] = measure(folder, p, n)
        took = time.perf_counter() - started
        print(f"  N={n}: {json.dumps(results[n])} ({took:.0f} s)", flush=True)
    print(table(HEADERS, [row_cells(p, n, results[n]) for n in p.levels]))
    print(
        f"ideal: {p.items} x {p.seconds} s / N of wall time; slot use: the items' summed "
        f"durations / (N x wall time)"
    )
    print(verdict(p, results))
