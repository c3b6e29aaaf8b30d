"""Clip kinds of `bench_clips` (issue 31): GOP structure × B-frames × size, and their floors.

A kind is an H.264 + AAC clip from libx264 (veryfast, keyframes exactly every `keyint`
frames, no scene-cut keyframes; with B-frames libx264's default B-pyramid). "1 s not aligned"
puts a keyframe every 29 frames, so keyframes drift away from the 1 fps sample times, as the
issue's `g=30` clip did (libx264's scene-cut decisions made its GOPs 29 frames and shorter).

For each kind this module measures, in its own processes, what planning alone costs (the
framer, decoding, resampling and JPEG of the whole stream, and of the audio alone) and its
peak memory, and what ffmpeg (`-threads 1`) needs per second of clip: every frame decoded,
keyframes only, and exactly the frame at each 1 s sample time (one accurate `-ss t
-frames:v 1` per sample, ffmpeg's start-up subtracted).
"""

from __future__ import annotations

import json
import math
import os
import resource
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: Names a kind set (`all`, `720p`, `sizes`, `one`) or lists kinds by name, comma-separated.
KINDS_ENV = "BENCH_CLIPS_KINDS"
#: Seconds after which no further kind is started (the rest are listed as skipped).
BUDGET_ENV = "BENCH_CLIPS_BUDGET_S"
DEFAULT_BUDGET_S = 600.0
#: How many times a row's streams run in its one client process; CPU is the least run's.
RUNS_ENV = "BENCH_CLIPS_RUNS"
FPS = 30


@dataclass(frozen=True)
class Kind:
    """One clip kind: frame size, keyframe interval in frames, B-frames, length."""

    name: str
    size: tuple[int, int]
    keyint: int
    bframes: bool = True
    seconds: int = 20

    @property
    def gop(self) -> str:
        """The keyframe interval as the tables print it."""
        aligned = {15: "0.5 s", 29: "1 s not aligned", 30: "1 s aligned", 60: "2 s", 300: "10 s"}
        return aligned.get(self.keyint, f"{self.keyint} frames")

    @property
    def label(self) -> str:
        """`720p30, GOP 1 s not aligned, B-frames` and the like."""
        b = "B-frames" if self.bframes else "no B-frames"
        return f"{self.size[1]}p30, GOP {self.gop}, {b}"


def _kinds() -> list[Kind]:
    hd = (1280, 720)
    out = [Kind("720p_gop1s_off", hd, 29)]
    out += [Kind("1080p_gop1s_off", (1920, 1080), 29), Kind("2160p_gop1s_off", (3840, 2160), 29)]
    out += [Kind("720p_gop1s_off_nob", hd, 29, bframes=False)]
    for keyint, tag in ((30, "gop1s_on"), (15, "gop0.5s"), (60, "gop2s"), (300, "gop10s")):
        out += [Kind(f"720p_{tag}", hd, keyint), Kind(f"720p_{tag}_nob", hd, keyint, False)]
    return out


#: Every kind of the full run: the issue's not-aligned 720p clip and its larger sizes first,
#: so a time box cuts 720p variants rather than sizes.
KINDS = _kinds()
KIND_SETS: dict[str, list[Kind]] = {
    "all": KINDS,
    "720p": [k for k in KINDS if k.size == (1280, 720)],
    "sizes": [k for k in KINDS if k.name.endswith("gop1s_off")],
    "one": KINDS[:1],
}
#: The smoke run: one small not-aligned kind of 2 s.
QUICK_KINDS = [Kind("360p_gop1s_off", (640, 360), 29, seconds=2)]


def selected(quick: bool, raw: str | None = None) -> list[Kind]:
    """The kinds to run: `BENCH_CLIPS_KINDS` (a set's name or kind names), else all."""
    if quick:
        return QUICK_KINDS
    raw = (os.environ.get(KINDS_ENV, "") if raw is None else raw).strip()
    if not raw:
        return KINDS
    if raw in KIND_SETS:
        return KIND_SETS[raw]
    by_name = {k.name: k for k in KINDS}
    names = [n.strip() for n in raw.split(",") if n.strip()]
    unknown = [n for n in names if n not in by_name]
    if unknown or not names:
        choices = ", ".join([*KIND_SETS, *by_name])
        raise SystemExit(f"{KINDS_ENV} must name a set or kinds ({choices}), got {raw!r}")
    return [by_name[n] for n in names]


def runs() -> int:
    """How many times each row's streams run (`BENCH_CLIPS_RUNS`, default 1)."""
    raw = os.environ.get(RUNS_ENV, "").strip()
    if not raw:
        return 1
    if not raw.isdigit() or int(raw) < 1:
        raise SystemExit(f"{RUNS_ENV} must be a whole number of runs of at least 1, got {raw!r}")
    return int(raw)


def budget_s() -> float:
    """The time box of the kinds table (`BENCH_CLIPS_BUDGET_S`, default 600 s)."""
    raw = os.environ.get(BUDGET_ENV, "")
    try:
        value = float(raw) if raw else DEFAULT_BUDGET_S
    except ValueError:
        value = -1.0
    if not value > 0:
        raise SystemExit(f"{BUDGET_ENV} must be a positive number of seconds, got {raw!r}")
    return value


def kind_clip(kind: Kind, folder: Path) -> Path:
    """The kind's clip in `folder`, generated (from a repeated encoded piece) if missing."""
    from benchmarks.bench_ingest import make_clip

    path = folder / f"kind_{kind.name}_{kind.seconds}s.mp4"
    if not path.exists():
        tmp = path.with_name(f".{path.name}.{os.getpid()}.mp4")
        piece = kind.keyint * math.ceil(2 * FPS / kind.keyint)  # whole GOPs, about 2 s
        make_clip(tmp, kind.seconds, kind.size, kind.keyint, piece, kind.bframes)
        tmp.replace(path)
    return path


def video_seconds(path: Path) -> float:
    """The video's length as the file declares it."""
    from duplex_client.media.probe import probe

    video = probe(path).video
    assert video is not None and video.duration_ms
    return video.duration_ms / 1000


# --- planning alone, in a fresh process ------------------------------------------------


def plan_child(path: str) -> None:
    """Entry point of the planning process: prints one JSON line."""
    import av  # noqa: F401  (imports before the RSS baseline)
    import cv2  # noqa: F401

    from benchmarks.bench_ingest import peak_rss_mb
    from duplex_client.framing import Framer, FramerConfig
    from duplex_client.media.clip import open_clip
    from duplex_client.media.frames import ClipFrames

    def plan(video: bool) -> tuple[float, float, int]:
        with open_clip(path, fps=1.0) as clip:
            frames = clip.frames if video else None
            cpu0 = time.process_time()
            for _ in Framer(FramerConfig()).plan(clip.audio, frames):
                pass
            cpu = time.process_time() - cpu0
            decoded = clip.frames.decoded_frames if isinstance(clip.frames, ClipFrames) else 0
            return cpu, clip.duration_ms / 1000, decoded

    plan(False)  # warm the audio path's imports and caches once
    before = rss_mb()
    cpu, seconds, decoded = plan(True)
    growth = peak_rss_mb() - before
    audio = min(plan(False)[0] for _ in range(2))
    result = {
        "plan_ms_per_s": cpu * 1000 / seconds,
        "audio_ms_per_s": audio * 1000 / seconds,
        "plan_rss_mb": growth,
        "decoded": decoded,
        "seconds": seconds,
    }
    print(json.dumps(result), flush=True)


def rss_mb() -> float:
    """Current resident set size of this process, MB."""
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def measure_plan(path: Path) -> dict[str, Any]:
    """Planning alone, in a fresh process (so its memory growth is this clip's)."""
    args = [sys.executable, "-m", "benchmarks.bench_clips", "--plan-child", str(path)]
    proc = subprocess.run(args, stdout=subprocess.PIPE, text=True, timeout=600)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        return {"error": f"planning process exited {proc.returncode}"}
    row: dict[str, Any] = json.loads(lines[-1])
    return row


# --- ffmpeg floors ----------------------------------------------------------------------


def ffmpeg_missing() -> str | None:
    """Why the ffmpeg floors cannot be measured (None when the `ffmpeg` CLI is on PATH)."""
    if shutil.which("ffmpeg") is None:
        return "ffmpeg CLI not found: floors not measured (install it: apt-get install ffmpeg)"
    return None


def _ffmpeg_cpu(args: list[str]) -> float:
    """CPU seconds (user + system) of one ffmpeg run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    cmd = ["ffmpeg", "-nostdin", "-hide_banner", "-v", "error", *args]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, timeout=900)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def ffmpeg_floors(path: Path, seconds: float, passes: int = 2) -> dict[str, float]:
    """ffmpeg's CPU ms per second of clip: every frame, keyframes only, the exact frames.

    The exact-frame floor is a small difference of large figures (each run's start-up is
    most of its CPU), so each sample's run is paired with a start-up run (the same command
    decoding no frame) right before it, and the passes are averaged.
    """
    clip = str(path)
    null = ["-an", "-f", "null", "-"]
    every = _ffmpeg_cpu(
        ["-threads", "1", "-i", clip, "-filter_threads", "1", "-vf", "fps=1", *null]
    )
    keys = _ffmpeg_cpu(["-threads", "1", "-skip_frame", "nokey", "-i", clip, *null])
    times = range(math.ceil(seconds))
    startup = exact = 0.0
    for _ in range(passes):
        for t in times:
            seek = ["-threads", "1", "-ss", f"{t:.3f}", "-i", clip]
            startup += _ffmpeg_cpu([*seek, "-frames:v", "0", *null])
            exact += _ffmpeg_cpu([*seek, "-frames:v", "1", *null])
    runs = passes * len(times)
    return {
        "every_ms_per_s": every * 1000 / seconds,
        "keys_ms_per_s": keys * 1000 / seconds,
        "exact_ms_per_s": max(0.0, exact - startup) / passes * 1000 / seconds,
        "startup_ms": startup / runs * 1000,
    }
