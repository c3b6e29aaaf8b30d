"""Generate `examples/sample.mp4`: 6 s of coloured frames with a spoken question.

Run from the repository root: `.venv/bin/python examples/make_sample_clip.py`.
Speech comes from eSpeak NG (the reference server's TTS, `server` extra); frames are red,
then blue, then green, each labelled with its colour name, at 320x240 and 10 fps; the
soundtrack is 48 kHz AAC. The output is small (well under 1 MB) and is committed.
"""

from __future__ import annotations

import sys
from fractions import Fraction
from pathlib import Path

import av
import cv2
import numpy as np

from duplex_client.server.engine.tts import speech_pcm16

OUT = Path(__file__).resolve().parent / "sample.mp4"
SECONDS, FPS, SIZE, RATE = 6, 10, (320, 240), 48000
SPEECH = "Hello there. What colour do you see?"
#: (start second, BGR colour, label)
SCENES = [(0, (0, 0, 220), "red"), (2, (220, 60, 0), "blue"), (4, (0, 180, 0), "green")]


def frame_at(second: float) -> np.ndarray:
    """The picture shown at `second`: the current scene's colour with its name."""
    _, colour, label = [s for s in SCENES if s[0] <= second][-1]
    img = np.empty((SIZE[1], SIZE[0], 3), np.uint8)
    img[:, :] = colour
    cv2.putText(img, label, (100, 135), cv2.FONT_HERSHEY_SIMPLEX, 1.6, (255, 255, 255), 3)
    return img


def soundtrack() -> np.ndarray:
    """The spoken question at 48 kHz, starting at 0.5 s, padded to the clip's length."""
    pcm = np.frombuffer(speech_pcm16(SPEECH, RATE, lead_ms=500), dtype="<i2")
    total = SECONDS * RATE
    if len(pcm) > total:
        raise SystemExit(f"speech is {len(pcm) / RATE:.1f} s, longer than the clip")
    return np.pad(pcm, (0, total - len(pcm))).astype(np.int16)


def main() -> int:
    """Write the clip and print its size."""
    with av.open(str(OUT), "w", options={"movflags": "faststart"}) as out:
        video = out.add_stream("libx264", rate=FPS, options={"preset": "veryslow", "crf": "30"})
        video.width, video.height, video.pix_fmt = SIZE[0], SIZE[1], "yuv420p"
        audio = out.add_stream("aac", rate=RATE, layout="mono")
        for i in range(SECONDS * FPS):
            frame = av.VideoFrame.from_ndarray(frame_at(i / FPS), format="bgr24")
            frame.pts, frame.time_base = i, Fraction(1, FPS)
            out.mux(video.encode(frame))
        out.mux(video.encode())
        pcm = soundtrack().astype(np.float32) / 32768.0
        size = 1024
        for i in range(0, len(pcm), size):
            block = np.pad(pcm[i : i + size], (0, max(0, size - len(pcm[i : i + size]))))
            frame = av.AudioFrame.from_ndarray(block.reshape(1, -1), format="fltp", layout="mono")
            frame.sample_rate, frame.pts = RATE, i
            out.mux(audio.encode(frame))
        out.mux(audio.encode())
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
