"""Ingest benchmark: soundtrack (16 kHz mono PCM) + 1 fps JPEG frames from an H.264/AAC clip.

Reported as × real time (clip seconds per wall second) on one pinned core, against the
`ffmpeg` command line doing the same extraction in the same run (skipped when ffmpeg is
not installed), for three GOP lengths of a generated 60 s 1280x720 30 fps clip; then the
peak RSS of ingesting generated 1920x1080 clips in a fresh process: 10 minutes with 1 s
GOPs, and 1 minute with 10 s GOPs (every reference frame decoded; memory does not grow
with the length).

Clips are generated quickly: a few seconds are encoded once (libx264 veryfast, AAC) and
their packets are repeated with shifted timestamps. Run: `python -m benchmarks.bench_ingest`.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

#: (label, keyframe interval, frames encoded once and repeated: a divisor of the clip's)
SCENARIOS = (
    ("GOP 1 s", 30, 60),
    ("GOP 2 s", 60, 120),
    ("GOP 10 s", 300, 300),
)
CLIP_SECONDS = 60
SIZE = (1280, 720)
FPS = 30
LONG_SECONDS = 600
LONG_SIZE = (1920, 1080)
LONG_KEYINT = 30
LONG_GOP_KEYINT = 300
RUNS = 3
FFMPEG_RUNS = 2


@dataclass(frozen=True)
class _Packet:
    data: bytes
    pts: int | None
    dts: int | None
    duration: int | None
    keyframe: bool


def _frame_image(i: int, width: int, height: int, base: Any) -> Any:
    """A moving picture: a panning colour gradient, a moving box, a pulsing channel."""
    import numpy as np

    img = np.roll(base, (i * 4) % width, axis=1)
    img[..., 2] = (img[..., 2].astype(np.uint16) + i * 3).astype(np.uint8)
    x = (i * 9) % (width - width // 6)
    y = (i * 5) % (height - height // 5)
    img[y : y + height // 5, x : x + width // 6] = (240, 240, 240)
    return img


def _encode_segment(
    path: Path, frames: int, size: tuple[int, int], keyint: int, bframes: bool = True
) -> None:
    """Encode `frames` of moving video (libx264 veryfast) and a 48 kHz stereo AAC tone."""
    import av
    import numpy as np

    width, height = size
    yy, xx = np.mgrid[0:height, 0:width]
    base = np.zeros((height, width, 3), np.uint8)
    base[..., 0] = (xx * 255 // width).astype(np.uint8)
    base[..., 1] = (yy * 255 // height).astype(np.uint8)
    base[..., 2] = ((xx + yy) * 127 // (width + height)).astype(np.uint8)
    params = f"keyint={keyint}:min-keyint={keyint}:scenecut=0" + ("" if bframes else ":bframes=0")
    with av.open(str(path), "w") as out:
        options = {"preset": "veryfast", "crf": "23", "x264-params": params}
        video = out.add_stream("libx264", rate=FPS, options=options)
        video.width, video.height, video.pix_fmt = width, height, "yuv420p"
        audio = out.add_stream("aac", rate=48000, layout="stereo")
        for i in range(frames):
            frame = av.VideoFrame.from_ndarray(_frame_image(i, width, height, base), "bgr24")
            frame.pts, frame.time_base = i, Fraction(1, FPS)
            out.mux(video.encode(frame))
        out.mux(video.encode())
        t = np.arange(frames * 48000 // FPS) / 48000
        wave = 0.2 * np.sin(2 * np.pi * 440 * t) * (1 + np.sin(2 * np.pi * 0.5 * t))
        pcm = wave.astype(np.float32)
        for i in range(0, len(pcm) - 1023, 1024):
            block = np.ascontiguousarray(np.stack([pcm[i : i + 1024]] * 2))
            aframe = av.AudioFrame.from_ndarray(block, format="fltp", layout="stereo")
            aframe.sample_rate, aframe.pts = 48000, i
            out.mux(audio.encode(aframe))
        out.mux(audio.encode())


def make_clip(
    path: Path, seconds: int, size: tuple[int, int], keyint: int, seg: int, bframes: bool = True
) -> Path:
    """Write a `seconds`-long clip by repeating the packets of an encoded `seg`-frame piece.

    The video holds whole pieces (it may run past `seconds` when `seg` does not divide it);
    the soundtrack stops at `seconds`.
    """
    import av

    piece = path.with_suffix(".piece.mp4")
    _encode_segment(piece, seg, size, keyint, bframes)
    with av.open(str(piece)) as src, av.open(str(path), "w") as out:
        vin, ain = src.streams.video[0], src.streams.audio[0]
        video = out.add_stream_from_template(vin)
        audio = out.add_stream_from_template(ain)
        vtb = vin.time_base or Fraction(1, 15360)
        atb = ain.time_base or Fraction(1, 48000)
        vpk: list[_Packet] = []
        apk: list[_Packet] = []
        for p in src.demux(vin, ain):
            if p.size:
                rec = _Packet(bytes(p), p.pts, p.dts, p.duration, p.is_keyframe)
                (vpk if p.stream.index == vin.index else apk).append(rec)
        v_span = round(Fraction(seg, FPS) / vtb)
        a_span = sum(p.duration or 1024 for p in apk)
        events: list[tuple[float, int, _Packet, int]] = []
        for r in range(-(-seconds * FPS // seg)):
            events += [(float(((p.dts or 0) + r * v_span) * vtb), 0, p, r * v_span) for p in vpk]
        a_end = round(seconds / atb)
        for r in range(-(-a_end // a_span)):
            shift = r * a_span
            events += [
                (float(((p.dts or 0) + shift) * atb), 1, p, shift)
                for p in apk
                if (p.pts or 0) + shift < a_end
            ]
        events.sort(key=lambda e: (e[0], e[1]))
        for _, which, rec, shift in events:
            packet = av.Packet(rec.data)
            packet.stream = video if which == 0 else audio
            packet.time_base = vtb if which == 0 else atb
            packet.pts = None if rec.pts is None else rec.pts + shift
            packet.dts = None if rec.dts is None else rec.dts + shift
            packet.duration = rec.duration
            packet.is_keyframe = rec.keyframe
            out.mux(packet)
    piece.unlink()
    return path


# --- measuring --------------------------------------------------------------------------


def ingest(path: Path) -> dict[str, Any]:
    """Our extraction: the whole soundtrack as PCM and one JPEG per second of video."""
    from duplex_client.media import ClipFrames, open_clip

    started = time.perf_counter()
    with open_clip(path, fps=1.0) as clip:
        assert clip.audio is not None and isinstance(clip.frames, ClipFrames)
        pcm_bytes = sum(len(chunk) for chunk in clip.audio.chunks())
        jpeg_bytes = frames = 0
        for start in range(0, clip.frames.duration_ms, 1000):
            group = clip.frames.group_for_unit(start, start + 1000)
            if group is not None and not group.held:
                frames += 1
                jpeg_bytes += len(group.base.data)
        decoded = clip.frames.decoded_frames
    return {
        "seconds": time.perf_counter() - started,
        "pcm_s": pcm_bytes / 32000,
        "frames": frames,
        "jpeg_kb": jpeg_bytes / frames / 1024 if frames else 0.0,
        "decoded": decoded,
    }


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far (VmHWM; ru_maxrss where /proc is absent).

    ru_maxrss alone would be wrong in a child: on Linux it keeps the parent's high-water
    mark from before `exec`.
    """
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child(path: str, runs: int) -> None:
    """Entry point of the measuring subprocess: best of `runs` ingests, then peak RSS."""
    import av  # noqa: F401  (count the libraries in the baseline, not in the ingest)
    import cv2  # noqa: F401
    import numpy  # noqa: F401
    import soundfile  # noqa: F401

    import duplex_client.media  # noqa: F401

    baseline = peak_rss_mb()
    results = [ingest(Path(path)) for _ in range(runs)]
    best = min(results, key=lambda r: r["seconds"])
    best["peak_rss_mb"] = peak_rss_mb()
    best["baseline_rss_mb"] = baseline
    print(json.dumps(best))


def measure_ours(path: Path, runs: int) -> dict[str, Any]:
    """Run `child` in a fresh interpreter (inherits the one-core pinning)."""
    code = f"from benchmarks.bench_ingest import child; child({str(path)!r}, {runs})"
    root = Path(__file__).resolve().parent.parent
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root
    )
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def measure_ffmpeg(path: Path, runs: int) -> float | None:
    """Best wall time of the ffmpeg CLI doing the same extraction (None if not installed)."""
    exe = shutil.which("ffmpeg")
    if exe is None:
        return None
    best = float("inf")
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as out:
            cmd = [
                exe, "-v", "error", "-nostdin", "-y", "-threads", "1", "-filter_threads", "1",
                "-i", str(path),
                "-map", "0:a:0", "-ac", "1", "-ar", "16000", "-f", "s16le", f"{out}/audio.pcm",
                "-map", "0:v:0", "-vf", "fps=1", "-q:v", "2", f"{out}/frame%05d.jpg",
            ]  # fmt: skip
            started = time.perf_counter()
            subprocess.run(cmd, check=True)
            best = min(best, time.perf_counter() - started)
    return best


@contextlib.contextmanager
def one_core() -> Iterator[int | None]:
    """Pin this process (and the children it starts) to one CPU, and unpin it afterwards.

    Unpinning matters: `make bench` runs the benchmarks in one process, and the pacing and
    sessions benchmarks that follow must get every core back.
    """
    if not hasattr(os, "sched_setaffinity"):
        yield None
        return
    before = os.sched_getaffinity(0)
    cpu = max(before)
    os.sched_setaffinity(0, {cpu})
    try:
        yield cpu
    finally:
        os.sched_setaffinity(0, before)


def _ffmpeg_version() -> str:
    exe = shutil.which("ffmpeg")
    if exe is None:
        return "not installed (comparison skipped; `apt-get install ffmpeg`)"
    out = subprocess.run([exe, "-version"], capture_output=True, text=True, check=False)
    return out.stdout.splitlines()[0] if out.stdout else "unknown"


def main() -> None:
    """Generate the clips, time ours against ffmpeg, and measure peak memory (on one core)."""
    with one_core() as cpu:
        _run(cpu)


def _run(cpu: int | None) -> None:
    import av

    print(f"machine: {platform.machine()} {platform.processor() or ''}, pinned to cpu {cpu}")
    print(f"python {platform.python_version()}, PyAV {av.__version__}, {_ffmpeg_version()}")
    width, height = SIZE
    print(
        f"\n{CLIP_SECONDS} s {width}x{height} {FPS} fps H.264 (veryfast, crf 23) + AAC 48 kHz "
        f"stereo → 16 kHz mono PCM + 1 fps JPEG (q90 / ffmpeg -q:v 2); best of {RUNS} runs "
        f"(ffmpeg {FFMPEG_RUNS}), one core"
    )
    header = f"{'clip':<26}{'ours':>9}{'× rt':>8}{'decoded':>9}{'ffmpeg':>9}{'× rt':>8}"
    print(header + f"{'ours/ffmpeg':>13}{'peak RSS':>10}")
    with tempfile.TemporaryDirectory() as tmp:
        for label, keyint, seg in SCENARIOS:
            path = make_clip(Path(tmp) / f"gop{keyint}.mp4", CLIP_SECONDS, SIZE, keyint, seg)
            ours = measure_ours(path, RUNS)
            theirs = measure_ffmpeg(path, FFMPEG_RUNS)
            row = (
                f"{label:<26}{ours['seconds']:>8.2f}s{CLIP_SECONDS / ours['seconds']:>7.0f}×"
                f"{ours['decoded']:>5}/{CLIP_SECONDS * FPS:<4}"
            )
            if theirs is None:
                row += f"{'-':>9}{'-':>8}{'-':>13}"
            else:
                ratio = ours["seconds"] / theirs
                row += f"{theirs:>8.2f}s{CLIP_SECONDS / theirs:>7.0f}×{ratio:>12.2f}×"
            print(row + f"{ours['peak_rss_mb']:>8.0f} MB", flush=True)
            path.unlink()
        long_w, long_h = LONG_SIZE
        print(f"\npeak memory, {long_w}x{long_h} {FPS} fps, same extraction, fresh process:")
        for seconds, keyint in ((LONG_SECONDS, LONG_KEYINT), (CLIP_SECONDS, LONG_GOP_KEYINT)):
            path = make_clip(Path(tmp) / "long.mp4", seconds, LONG_SIZE, keyint, 2 * keyint)
            size_mb = path.stat().st_size / 1e6
            ours = measure_ours(path, 1)
            print(
                f"  {seconds / 60:g} min, GOP {keyint / FPS:g} s ({size_mb:.0f} MB): peak RSS "
                f"{ours['peak_rss_mb']:.0f} MB (with libraries only: "
                f"{ours['baseline_rss_mb']:.0f} MB); {ours['frames']} frames, "
                f"{ours['pcm_s']:.0f} s of PCM in {ours['seconds']:.1f} s "
                f"({seconds / ours['seconds']:.0f}× real time)",
                flush=True,
            )
            path.unlink()


if __name__ == "__main__":
    main()
