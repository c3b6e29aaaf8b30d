"""`bench_eval`'s items: a 10 s speech clip with 1 fps frames, generated once and hard-linked.

The clip is kept in `BENCH_CACHE` (`bench_clips.cache_dir`) and linked under many names in a
directory, which is the eval's input.
"""

from __future__ import annotations

import os
import shutil
from fractions import Fraction
from pathlib import Path
from typing import Any

from benchmarks._common import camera_image, speech_like_pcm
from benchmarks.bench_clips import cache_dir

SIZE = (640, 480)
AUDIO_RATE_HZ = 48000
#: Bumped when the generated clip changes, so a stale cache is not reused.
CLIP_VERSION = 2
SENTENCES = (
    "Hello, can you hear me and see the picture I am showing you?",
    "What colour is the card I am holding?",
)
LEAD_S, PAUSE_S = 0.5, 1.5


def _tts_pieces(rate: int) -> list[Any]:
    """`SENTENCES` spoken by eSpeak NG as float32 at `rate` (empty when it is unavailable)."""
    import numpy as np

    try:
        from duplex_client.server.engine.tts import TtsUnavailableError, synthesize

        return [synthesize(t, rate).samples.astype(np.float32) / 32768 for t in SENTENCES]
    except (ImportError, TtsUnavailableError):
        return []


def speech_track(seconds: float, rate: int = AUDIO_RATE_HZ) -> tuple[Any, str]:
    """`seconds` of mono float32 speech at `rate` and where it came from (TTS or synthetic).

    Sentences start after `LEAD_S` with `PAUSE_S` between them; the track is cut or padded
    with silence to exactly `seconds`.
    """
    import numpy as np

    pieces, source = _tts_pieces(rate), "eSpeak NG"
    if not pieces:
        source = "synthetic (speech-like bursts; eSpeak NG unavailable)"
        pcm = np.frombuffer(speech_like_pcm(2500), dtype="<i2").astype(np.float32) / 32768
        burst = np.interp(np.arange(round(2.5 * rate)) * 16000 / rate, np.arange(pcm.size), pcm)
        pieces = [burst.astype(np.float32)] * len(SENTENCES)
    total = round(seconds * rate)
    track = np.zeros(total, np.float32)
    at = round(LEAD_S * rate)
    for piece in pieces:
        span = max(0, min(piece.size, total - at))
        track[at : at + span] = piece[:span]
        at += span + round(PAUSE_S * rate)
    return track, source


def write_clip(path: Path, seconds: int, size: tuple[int, int] = SIZE) -> str:
    """Write a `seconds` clip: 1 fps H.264 frames of `size`, 48 kHz mono AAC speech."""
    import av
    import numpy as np

    width, height = size
    track, source = speech_track(seconds)
    base = camera_image(width, height)
    with av.open(str(path), "w") as out:
        options = {"preset": "veryfast", "x264-params": "keyint=2:min-keyint=2:scenecut=0"}
        video = out.add_stream("libx264", rate=1, options=options)
        video.width, video.height, video.pix_fmt = width, height, "yuv420p"
        audio = out.add_stream("aac", rate=AUDIO_RATE_HZ, layout="mono")
        for i in range(seconds):
            image = np.roll(base, 40 * i, axis=1)
            image[: height // 4, : width // 4] = (60, 40 + 100 * ((i // 5) % 2), 200)
            frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(image), format="bgr24")
            frame.pts, frame.time_base = i, Fraction(1, 1)
            out.mux(video.encode(frame))
        out.mux(video.encode())
        block = 1024
        padded = np.pad(track, (0, -track.size % block))
        for i in range(0, padded.size, block):
            piece = np.ascontiguousarray(padded[i : i + block].reshape(1, -1))
            aframe = av.AudioFrame.from_ndarray(piece, format="fltp", layout="mono")
            aframe.sample_rate, aframe.pts = AUDIO_RATE_HZ, i
            out.mux(audio.encode(aframe))
        out.mux(audio.encode())
    return source


def items_dir(count: int, seconds: int, size: tuple[int, int] = SIZE) -> Path:
    """The cached input directory: one clip hard-linked (or copied) under `count` names."""
    width, height = size
    tag = f"{width}x{height}_{seconds}s_v{CLIP_VERSION}"
    clip = cache_dir() / f"eval_clip_{tag}.mp4"
    if not clip.exists():
        tmp = clip.with_name(f".{clip.name}.{os.getpid()}.mp4")
        source = write_clip(tmp, seconds, size)
        clip.with_suffix(".source.txt").write_text(source + "\n", encoding="utf-8")
        tmp.replace(clip)
    return linked_items(clip, count, tag)


def linked_items(clip: Path, count: int, tag: str) -> Path:
    """A cached input directory: `clip` hard-linked (or copied) under `count` names."""
    folder = cache_dir() / f"eval_items_{count}x{tag}"
    names = [f"item_{i:02d}{clip.suffix}" for i in range(count)]
    if folder.is_dir() and sorted(p.name for p in folder.iterdir()) == names:
        return folder
    tmp_dir = folder.with_name(f".{folder.name}.{os.getpid()}")
    shutil.rmtree(tmp_dir, ignore_errors=True)
    tmp_dir.mkdir()
    for name in names:
        try:
            os.link(clip, tmp_dir / name)
        except OSError:
            shutil.copyfile(clip, tmp_dir / name)
    shutil.rmtree(folder, ignore_errors=True)
    tmp_dir.replace(folder)
    return folder


def clip_source(seconds: int, size: tuple[int, int] = SIZE) -> str:
    """Where the cached clip's speech came from (as recorded when it was generated)."""
    width, height = size
    note = cache_dir() / f"eval_clip_{width}x{height}_{seconds}s_v{CLIP_VERSION}.source.txt"
    return note.read_text(encoding="utf-8").strip() if note.exists() else "unknown"


# --- one level ---------------------------------------------------------------------------
