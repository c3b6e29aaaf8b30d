"""Media files generated at test time with PyAV and numpy (small frames, a few seconds)."""

from __future__ import annotations

import struct
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

import av
import numpy as np

W, H = 64, 48
#: Display-matrix of a portrait phone clip: ffprobe says "rotation of -90 degrees".
PORTRAIT_MATRIX = [0, 65536, 0, -65536, 0, 0, 0, 0, 1073741824]


def palette(i: int) -> tuple[int, int, int]:
    """A BGR colour that identifies frame `i` (0..215) after lossy coding."""
    return (40 * (i % 6) + 20, 40 * ((i // 6) % 6) + 20, 40 * (i // 36) + 20)


def frame_index(bgr: Any) -> int:
    """Which `palette` colour a decoded image (or region of one) shows."""
    mean = np.asarray(bgr, dtype=np.float64).reshape(-1, 3).mean(axis=0)
    steps = np.clip(np.round((mean - 20) / 40), 0, 5).astype(int)
    return int(steps[0] + 6 * steps[1] + 36 * steps[2])


def colour_frame(i: int, w: int = W, h: int = H, marker: bool = False) -> Any:
    """A frame filled with `palette(i)`; `marker` paints the top-left 8x8 corner pure red."""
    img = np.empty((h, w, 3), np.uint8)
    img[:, :] = palette(i)
    if marker:
        img[:8, :8] = (0, 0, 255)
    return img


def tone(seconds: float, rate: int, hz: float, channels: int = 1, amp: float = 0.3) -> Any:
    """A sine tone, shape (channels, samples), float32; channel c gets `hz * (c + 1)`."""
    t = np.arange(round(seconds * rate)) / rate
    return np.stack([amp * np.sin(2 * np.pi * hz * (c + 1) * t) for c in range(channels)]).astype(
        np.float32
    )


def write_clip(
    path: Path,
    *,
    video_seconds: float = 3.0,
    fps: int = 10,
    size: tuple[int, int] = (W, H),
    audio_seconds: float | None = None,
    audio_rate: int = 48000,
    layout: str = "stereo",
    tone_hz: float = 1000.0,
    matrix: Sequence[int] | None = None,
    codec: str = "libx264",
    keyint: int | None = None,
    bframes: bool = True,
    vfr_ms: Sequence[int] | None = None,
    faststart: bool = False,
    marker: bool = False,
) -> Path:
    """Write an mp4: palette-coloured frames (frame i = palette(i)) and an optional AAC tone.

    `vfr_ms` gives explicit frame times in ms (variable frame rate); `audio_seconds` None
    means video only.
    """
    w, h = size
    options = {"movflags": "faststart"} if faststart else {}
    with av.open(str(path), "w", options=options) as out:
        stream_opts: dict[str, str] = {}
        if codec == "libx264":
            params = [f"keyint={keyint}:min-keyint={keyint}:scenecut=0"] if keyint else []
            if not bframes:
                params.append("bframes=0")
            stream_opts = {"preset": "veryfast"}
            if params:
                stream_opts["x264-params"] = ":".join(params)
        vs = out.add_stream(codec, rate=1000 if vfr_ms else fps, options=stream_opts)
        vs.width, vs.height, vs.pix_fmt = w, h, "yuv420p"
        if vfr_ms is not None:
            vs.time_base = Fraction(1, 1000)
        if matrix is not None:
            vs.set_display_matrix(list(matrix))
        audio = add_aac(out, audio_rate, layout) if audio_seconds else None
        times = list(vfr_ms) if vfr_ms is not None else None
        count = len(times) if times is not None else round(video_seconds * fps)
        for i in range(count):
            frame = av.VideoFrame.from_ndarray(colour_frame(i, w, h, marker), format="bgr24")
            if times is not None:
                frame.pts, frame.time_base = times[i], Fraction(1, 1000)
            else:
                frame.pts, frame.time_base = i, Fraction(1, fps)
            for packet in vs.encode(frame):
                out.mux(packet)
        for packet in vs.encode():
            out.mux(packet)
        if audio is not None and audio_seconds:
            write_aac(out, audio, audio_seconds, tone_hz)
    return path


def write_moving_clip(
    path: Path,
    *,
    size: tuple[int, int] = (160, 120),
    seconds: float = 11.0,
    fps: int = 30,
    keyint: int = 30,
    bframes: bool = True,
    open_gop: bool = False,
    vfr_ms: Sequence[int] | None = None,
) -> Path:
    """H.264 of a panning gradient with a moving box: every frame differs from its neighbours.

    Keyframes every `keyint` frames exactly (no scene-cut keyframes); `bframes` False encodes
    without B-frames (with them, libx264's default B-pyramid makes some B-frames references);
    `open_gop` lets B-frames after a keyframe refer across it; `vfr_ms` gives frame times in ms.
    """
    w, h = size
    yy, xx = np.mgrid[0:h, 0:w]
    base = np.dstack([xx * 255 // w, yy * 255 // h, (xx + yy) * 127 // (w + h)]).astype(np.uint8)
    params = f"keyint={keyint}:min-keyint={keyint}:scenecut=0"
    params += ("" if bframes else ":bframes=0") + (":open-gop=1" if open_gop else "")
    count = len(vfr_ms) if vfr_ms else round(seconds * fps)
    box_h, box_w = max(2, h // 6), max(2, w // 8)
    with av.open(str(path), "w") as out:
        opts = {"preset": "veryfast", "x264-params": params}
        vs = out.add_stream("libx264", rate=1000 if vfr_ms else fps, options=opts)
        vs.width, vs.height, vs.pix_fmt = w, h, "yuv420p"
        if vfr_ms:
            vs.time_base = Fraction(1, 1000)
        for i in range(count):
            img = np.roll(base, i * 3, axis=1)
            y, x = (i * 2) % (h - box_h), (i * 5) % (w - box_w)
            img[y : y + box_h, x : x + box_w] = 240
            frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(img), format="bgr24")
            if vfr_ms:
                frame.pts, frame.time_base = vfr_ms[i], Fraction(1, 1000)
            else:
                frame.pts, frame.time_base = i, Fraction(1, fps)
            out.mux(vs.encode(frame))
        out.mux(vs.encode())
    return path


def add_aac(out: Any, rate: int, layout: str) -> Any:
    """Add an AAC stream to an output container (before anything is muxed)."""
    return out.add_stream("aac", rate=rate, layout=layout)


def write_aac(out: Any, stream: Any, seconds: float, hz: float) -> None:
    """Encode a tone (channel c at `hz * (c + 1)`) into `stream` and mux it."""
    rate, layout = stream.rate, stream.layout.name
    channels = 2 if layout == "stereo" else 1
    pcm = tone(seconds, rate, hz, channels)
    size = 1024
    for i in range(0, pcm.shape[1], size):
        block = pcm[:, i : i + size]
        if block.shape[1] < size:
            block = np.pad(block, ((0, 0), (0, size - block.shape[1])))
        block = np.ascontiguousarray(block)
        frame = av.AudioFrame.from_ndarray(block, format="fltp", layout=layout)
        frame.sample_rate, frame.pts = rate, i
        for packet in stream.encode(frame):
            out.mux(packet)
    for packet in stream.encode():
        out.mux(packet)


def write_audio_file(path: Path, seconds: float, rate: int, hz: float, channels: int = 1) -> Path:
    """An audio file in the suffix's container: wav/flac/ogg/mp3 by soundfile, m4a by PyAV."""
    pcm = tone(seconds, rate, hz, channels)
    if path.suffix == ".m4a":
        with av.open(str(path), "w", format="ipod") as out:
            stream = add_aac(out, rate, "mono" if channels == 1 else "stereo")
            write_aac(out, stream, seconds, hz)
        return path
    import soundfile as sf

    sf.write(str(path), pcm.T, rate)
    return path


def write_unknown_codec_wav(path: Path) -> Path:
    """A RIFF/WAVE file whose format tag (0x3412) no decoder knows."""
    data = bytes(3200)
    fmt = struct.pack("<HHIIHH", 0x3412, 1, 16000, 32000, 2, 16)
    body = b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt
    body += b"data" + struct.pack("<I", len(data)) + data
    path.write_bytes(b"RIFF" + struct.pack("<I", len(body)) + body)
    return path


def dominant_hz(pcm: bytes, rate: int = 16000) -> float:
    """Frequency of the strongest FFT bin of int16 PCM (Hann-windowed)."""
    x = np.frombuffer(pcm, dtype="<i2").astype(np.float64)
    spectrum = np.abs(np.fft.rfft(x * np.hanning(len(x))))
    return float(np.argmax(spectrum) * rate / len(x))


#: Frequencies of `two_tone`: left/mono 440 Hz, right 1 kHz (the mono mix holds both).
TWO_TONE_HZ = (440.0, 1000.0)


def two_tone(seconds: float, rate: int, channels: int = 1, amp: float = 0.5) -> Any:
    """Shape (samples, channels) float64 whose channel mean is always `two_tone_mono`.

    Mono is `amp/2 * (sin 440 Hz + sin 1 kHz)`; stereo puts `amp * sin 440 Hz` left and
    `amp * sin 1 kHz` right, so a correct downmix gives the same signal as the mono file.
    """
    t = np.arange(round(seconds * rate)) / rate
    low, high = (np.sin(2 * np.pi * hz * t) for hz in TWO_TONE_HZ)
    if channels == 1:
        return (amp / 2 * (low + high))[:, None]
    if channels == 2:
        return amp * np.stack([low, high], axis=1)
    raise ValueError("two_tone makes mono or stereo")


def two_tone_mono(samples: int, rate: int = 16000, amp: float = 0.5) -> Any:
    """The mono mix of `two_tone`, computed analytically at `rate` (the reference)."""
    t = np.arange(samples) / rate
    return amp / 2 * sum(np.sin(2 * np.pi * hz * t) for hz in TWO_TONE_HZ)


def write_two_tone_wav(
    path: Path, *, rate: int, channels: int, subtype: str, seconds: float = 1.5
) -> Path:
    """A `two_tone` WAV in a libsndfile subtype (`FLOAT`, `DOUBLE`, `PCM_U8`, `PCM_24`, ...)."""
    import soundfile as sf

    sf.write(str(path), two_tone(seconds, rate, channels), rate, subtype=subtype)
    return path


def best_correlation(got: Any, ref: Any, max_lag: int) -> tuple[float, int]:
    """Highest normalised correlation of `got` with `ref` over lags ±max_lag, and that lag.

    A positive lag means `got` is late (sample `i + lag` of got matches sample `i` of ref).
    Only the overlap is compared, so the resampler's delay and edge transients do not count.
    """
    x = np.asarray(got, dtype=np.float64)
    y = np.asarray(ref, dtype=np.float64)
    best, best_lag = -1.0, 0
    for lag in range(-max_lag, max_lag + 1):
        a = x[max(lag, 0) :]
        b = y[max(-lag, 0) :]
        n = min(len(a), len(b)) - 2 * max_lag
        if n <= 0:
            continue
        a, b = a[max_lag : max_lag + n], b[max_lag : max_lag + n]
        denom = float(np.linalg.norm(a) * np.linalg.norm(b))
        corr = float(np.dot(a, b)) / denom if denom else 0.0
        if corr > best:
            best, best_lag = corr, lag
    return best, best_lag
