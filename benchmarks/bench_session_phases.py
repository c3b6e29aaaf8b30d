"""Where a `stream_clip(realtime=True)` run's CPU goes beyond planning, by phase and thread.

For the issue's clip (issue 31: 720p30, GOP 1 s not aligned, B-frames, from
`benchmarks._clip_kinds`) and a 10 s speech WAV (48 kHz mono, `bench_eval`'s speech track),
one client process per input streams against `duplex-cli serve --engine scripted`: a 2 s
warm-up stream first (as `bench_clips`), then `BENCH_PHASES_REPS` runs (default 3), each with
the thumbnail cache emptied. The run's `RunProgress.phase` marks the phases: **connect**
(options, bundle, handshake), **stream** (first to last append), **after** (the commit, the
answer heard out, the timeline written), **finish** (close, heard files, listening report,
`result.json`). Per phase, CPU ms per stream-second by thread group, read from
`/proc/self/task/*/schedstat` (ns) at each mark (`main`: the event loop; `plan`: the planning pool;
`thumbnails`; `native`: libav/OpenCV/onnxruntime threads and threads gone by the next mark),
and the event loop's wakeups (waits that slept): the minimum over the runs of each figure.
Run: `python -m benchmarks.bench_session_phases` (`BENCH_PHASES_INPUTS=clip|wav`).
"""

from __future__ import annotations

import asyncio
import json
import os
import selectors
import subprocess
import sys
import tempfile
import threading
import time
import wave
from pathlib import Path
from typing import Any

from benchmarks import _clip_kinds
from benchmarks._common import ServerProcess, machine, table

PHASES = ("connect", "stream", "after", "finish")
GROUPS = ("main", "plan", "thumbnails", "native")
#: `RunProgress.phase` values that open each phase (connect opens with the call).
OPENS = {"streaming": "stream", "finishing": "after", "closing": "finish"}
INPUTS_ENV = "BENCH_PHASES_INPUTS"
REPS_ENV = "BENCH_PHASES_REPS"


def speech_wav(folder: Path) -> Path:
    """10 s of speech (TTS, or speech-like bursts) as a 48 kHz mono PCM16 WAV, made once."""
    import numpy as np

    from benchmarks.bench_eval.items import speech_track

    path = folder / "speech10s.wav"
    if not path.exists():
        track, _ = speech_track(10.0, 48000)
        pcm = (np.clip(track, -1, 1) * 32767).astype("<i2").tobytes()
        tmp = path.with_name(f".{path.name}.{os.getpid()}")
        with wave.open(str(tmp), "wb") as w:
            w.setnchannels(1)
            w.setsampwidth(2)
            w.setframerate(48000)
            w.writeframes(pcm)
        tmp.replace(path)
    return path


def _group(name: str | None) -> str:
    if name == "MainThread":
        return "main"
    if name is not None and name.startswith("duplex-plan"):
        return "plan"
    if name is not None and name.startswith("duplex-thumbnails"):
        return "thumbnails"
    return "native"


class _Meter:
    """Process, per-thread CPU and loop wakeups at each phase mark."""

    def __init__(self) -> None:
        self.marks: list[tuple[str, float, dict[int, float], dict[int, str], int]] = []
        self.wakes = 0

    def mark(self, phase: str) -> None:
        names = {t.native_id: t.name for t in threading.enumerate() if t.native_id}
        cpu: dict[int, float] = {}
        for tid in os.listdir("/proc/self/task"):
            try:
                with open(f"/proc/self/task/{tid}/schedstat") as fh:
                    cpu[int(tid)] = int(fh.read().split()[0]) / 1e9  # on-CPU time, ns
            except (OSError, ValueError, IndexError):  # the thread ended meanwhile
                continue
        self.marks.append((phase, time.process_time(), cpu, names, self.wakes))

    def cells(self, media_s: float) -> dict[str, float]:
        """`phase/group` and `phase/wakes` figures between consecutive marks."""
        out: dict[str, float] = {}
        pairs = zip(self.marks, self.marks[1:], strict=False)
        for (phase, p0, c0, _, w0), (_, p1, c1, names, w1) in pairs:
            seen = 0.0
            for tid, cpu in c1.items():
                group = _group(names.get(tid))
                if group == "native":
                    continue
                ms = (cpu - c0.get(tid, 0.0)) * 1000 / media_s
                out[f"{phase}/{group}"] = out.get(f"{phase}/{group}", 0.0) + ms
                seen += ms
            total = (p1 - p0) * 1000 / media_s
            out[f"{phase}/native"] = max(0.0, total - seen)
            out[f"{phase}/total"] = total
            out[f"{phase}/wakes"] = w1 - w0
        return out


def child(url: str, kind: str, source: str, warm: str, reps: int) -> None:
    """One measuring client process: prints one JSON line of per-cell minimums."""
    from duplex_client.bundle import thumbnails
    from duplex_client.bundle.layout import BundleLayout
    from duplex_client.run.progress import RunProgress
    from duplex_client.run.stream import stream_clip

    meter = _Meter()
    select = selectors.EpollSelector.select

    def counted(
        self: selectors.EpollSelector, timeout: float | None = None
    ) -> list[tuple[selectors.SelectorKey, int]]:
        started = time.perf_counter()
        ready = select(self, timeout)
        meter.wakes += time.perf_counter() - started > 0.0005  # it slept
        return ready

    selectors.EpollSelector.select = counted  # type: ignore[method-assign,assignment]

    class Marked(RunProgress):
        def __setattr__(self, name: str, value: Any) -> None:
            if name == "phase" and value in OPENS:
                meter.mark(OPENS[value])
            super().__setattr__(name, value)

    runs: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory() as out:
        media = {"input_audio" if kind == "wav" else "input_video": source}
        asyncio.run(stream_clip(url, input_video=warm, output_dir=f"{out}/warm"))
        for i in range(reps):
            thumbnails._MADE.clear()  # a fresh process's thumbnails are all made
            meter.marks.clear()
            progress = Marked(figures=False)
            meter.mark("connect")
            asyncio.run(stream_clip(url, progress=progress, output_dir=f"{out}/{i}", **media))
            meter.mark("end")
            rows = json.loads(BundleLayout(Path(out) / str(i)).timeline.read_text())["appends"]
            runs.append(meter.cells(max(a["media_end_ms"] for a in rows) / 1000))
    keys = sorted({k for r in runs for k in r})
    print(json.dumps({k: min(r.get(k, 0.0) for r in runs) for k in keys}), flush=True)


def main() -> None:
    """Each input's table: phases by thread group, CPU ms per stream-second, and wakeups."""
    from benchmarks.bench_clips import cache_dir, clip_path

    raw = os.environ.get(REPS_ENV, "3")
    if not raw.isdigit() or int(raw) < 1:
        raise SystemExit(f"{REPS_ENV} must be a positive whole number, got {raw!r}")
    inputs = [s for s in os.environ.get(INPUTS_ENV, "clip,wav").split(",") if s]
    if not inputs or any(s not in ("clip", "wav") for s in inputs):
        raise SystemExit(f"{INPUTS_ENV} must list clip and/or wav, got {inputs!r}")
    os.environ.setdefault("DUPLEX_PLAN_CACHE", "off")  # planning is measured: never warm
    folder = cache_dir()
    warm = clip_path("warm", (64, 48), 1)
    print(f"machine: {machine()}")
    for kind in inputs:
        if kind == "clip":
            source = _clip_kinds.kind_clip(_clip_kinds.KIND_SETS["one"][0], folder)
        else:
            source = speech_wav(folder)
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
        with ServerProcess(max_sessions=3) as server:
            args = [sys.executable, "-m", "benchmarks.bench_session_phases", "--child"]
            args += [server.url, kind, str(source), str(warm), raw]
            proc = subprocess.run(args, stdout=subprocess.PIPE, text=True, timeout=900)
        lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
        if proc.returncode != 0 or not lines:
            print(f"{kind}: client exited {proc.returncode}")
            continue
        cells = json.loads(lines[-1])
        rows: list[list[object]] = [
            [
                phase,
                *(f"{cells.get(f'{phase}/{g}', 0.0):.1f}" for g in (*GROUPS, "total")),
                int(cells.get(f"{phase}/wakes", 0)),
            ]
            for phase in PHASES
        ]
        print(f"\n{kind}: {source.name} (load before {load}), min of {raw} runs")
        print(table(["phase", *GROUPS, "total", "loop wakeups"], rows))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], int(sys.argv[6]))
    else:
        main()
