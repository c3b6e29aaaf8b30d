"""`probe(path)`: what a media file holds (streams, codecs, duration, fps, rotation, rate).

Rotation follows ffprobe: `rotation_deg` is the display matrix's counter-clockwise angle,
so a portrait phone clip usually reports -90 (shown after turning the stored frame 90°
clockwise). Still images (JPEG, PNG, ... read through FFmpeg's image demuxers) are marked
`is_image`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from duplex_client.media.errors import MediaError, av_reason, check_file, open_failure

if TYPE_CHECKING:
    from av.container import InputContainer

#: How many packets `probe` reads to find the first decodable frame (for its rotation).
_ROTATION_PACKET_BUDGET = 64


@dataclass(frozen=True, slots=True)
class StreamInfo:
    """One stream of a media file (video fields are 0 for audio and the reverse)."""

    index: int
    kind: str
    codec: str | None
    decodable: bool
    duration_ms: int | None = None
    width: int = 0
    height: int = 0
    avg_fps: float = 0.0
    num_frames: int = 0
    rotation_deg: int = 0
    sample_rate: int = 0
    channels: int = 0
    layout: str | None = None
    attached_pic: bool = False
    #: The audio decoder's sample format as FFmpeg names it (`s16`, `fltp`, ...).
    sample_format: str | None = None


@dataclass(frozen=True, slots=True)
class MediaInfo:
    """What `probe` found: container facts, every stream, and the video/audio it would use."""

    path: str
    format: str
    duration_ms: int
    streams: tuple[StreamInfo, ...]
    video: StreamInfo | None
    audio: StreamInfo | None
    is_image: bool = False

    @property
    def rotation_deg(self) -> int:
        """The video's display rotation (0 without video)."""
        return self.video.rotation_deg if self.video else 0

    @property
    def display_size(self) -> tuple[int, int]:
        """Video width and height as shown, after rotation ((0, 0) without video)."""
        if self.video is None:
            return (0, 0)
        w, h = self.video.width, self.video.height
        return (h, w) if self.video.rotation_deg % 180 else (w, h)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready facts."""
        return asdict(self)

    def summary(self) -> str:
        """One line for people: duration, video and audio facts."""
        parts = [f"{self.path}: {self.format}, {self.duration_ms / 1000:.2f} s"]
        if self.video is not None:
            v = self.video
            w, h = self.display_size
            what = "image" if self.is_image else f"{v.avg_fps:g} fps, {v.num_frames} frames"
            rot = f", rotation {v.rotation_deg}" if v.rotation_deg else ""
            parts.append(f"video {v.codec} {w}x{h} {what}{rot}")
        if self.audio is not None:
            a = self.audio
            parts.append(f"audio {a.codec} {a.sample_rate} Hz {a.channels} ch")
        others = [s.kind for s in self.streams if s is not self.video and s is not self.audio]
        if others:
            parts.append("other streams: " + ", ".join(others))
        return "; ".join(parts)


@contextmanager
def open_input(path: str | os.PathLike[str]) -> Iterator[InputContainer]:
    """Open a file with PyAV for reading, turning every failure into a one-line `MediaError`."""
    import av

    check_file(path)
    try:
        container = av.open(os.fspath(path), mode="r")
    except av.FFmpegError as exc:
        raise open_failure(path, exc) from exc
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise MediaError(path, f"cannot open ({av_reason(exc)})") from exc
    try:
        yield container
    finally:
        container.close()


def origin_seconds(container: InputContainer) -> Fraction:
    """Media time 0 of a file: the container's start time (0 when unknown)."""
    start = container.start_time
    return Fraction(start, 1_000_000) if start else Fraction(0)


def probe(path: str | os.PathLike[str]) -> MediaInfo:
    """Read a media file's facts; raises `MediaError` if it is not something PyAV can open."""
    with open_input(path) as container:
        origin = origin_seconds(container)
        streams = tuple(_stream_info(s, origin) for s in container.streams)
        video = next((s for s in streams if s.kind == "video" and not s.attached_pic), None)
        audio = next((s for s in streams if s.kind == "audio"), None)
        if video is not None and video.decodable:
            rotation = _first_frame_rotation(container, video.index)
            if rotation:
                video = _with_rotation(video, rotation)
                streams = tuple(video if s.index == video.index else s for s in streams)
        fmt = container.format.name
        duration_ms = _ms(Fraction(container.duration, 1_000_000)) if container.duration else 0
    known = [s.duration_ms for s in (video, audio) if s is not None and s.duration_ms]
    if known:
        duration_ms = max(known)
    is_image = video is not None and (fmt == "image2" or fmt.endswith("_pipe"))
    return MediaInfo(
        path=os.fspath(path),
        format=fmt,
        duration_ms=duration_ms,
        streams=streams,
        video=video,
        audio=audio,
        is_image=is_image,
    )


def _stream_info(stream: Any, origin: Fraction) -> StreamInfo:
    ctx = stream.codec_context
    kind = str(stream.type)
    common: dict[str, Any] = {
        "index": int(stream.index),
        "kind": kind,
        "codec": ctx.name if ctx is not None else None,
        "decodable": ctx is not None,
        "duration_ms": _stream_end_ms(stream, origin),
    }
    if kind == "video" and ctx is not None:
        rate = stream.average_rate or stream.guessed_rate
        fps = float(rate) if rate else 0.0
        frames = int(stream.frames or 0)
        if not frames and fps and common["duration_ms"]:
            frames = round(common["duration_ms"] * fps / 1000)
        attached = bool(int(stream.disposition) & _attached_pic_flag())
        return StreamInfo(
            **common,
            width=int(ctx.width),
            height=int(ctx.height),
            avg_fps=round(fps, 3),
            num_frames=frames,
            attached_pic=attached,
        )
    if kind == "audio" and ctx is not None:
        layout = ctx.layout.name if ctx.layout is not None else None
        sample_format = ctx.format.name if ctx.format is not None else None
        return StreamInfo(
            **common,
            sample_rate=int(ctx.sample_rate),
            channels=int(ctx.channels),
            layout=layout,
            sample_format=sample_format,
        )
    return StreamInfo(**common)


def _stream_end_ms(stream: Any, origin: Fraction) -> int | None:
    tb = stream.time_base
    if not stream.duration or tb is None:
        return None
    start = Fraction(stream.start_time or 0) * tb
    return max(0, _ms(start + Fraction(stream.duration) * tb - origin))


def _attached_pic_flag() -> int:
    import av.stream

    return int(av.stream.Disposition.attached_pic)


def _first_frame_rotation(container: InputContainer, index: int) -> int:
    import av

    stream = next(s for s in container.streams.video if s.index == index)
    try:
        for n, packet in enumerate(container.demux(stream)):
            for frame in stream.decode(packet):
                return normalize_rotation(frame.rotation)
            if n >= _ROTATION_PACKET_BUDGET:
                break
    except av.FFmpegError:
        pass
    return 0


def normalize_rotation(degrees: float) -> int:
    """A display-matrix angle rounded to one of 0, 90, 180, -90."""
    quarter = round(degrees / 90) % 4
    return (0, 90, 180, -90)[quarter]


def _with_rotation(info: StreamInfo, rotation: int) -> StreamInfo:
    fields = asdict(info)
    fields["rotation_deg"] = rotation
    return StreamInfo(**fields)


def _ms(seconds: Fraction) -> int:
    return round(seconds * 1000)
