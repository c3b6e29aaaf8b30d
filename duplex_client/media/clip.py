"""`open_clip(path)`: a media file as the framer's sources (soundtrack PCM and/or frames).

A clip with video and audio gives both; a clip without an audio track gives frames only
(VISION units downstream); an audio-only file (wav, flac, mp3, m4a, ogg, ...) gives PCM
only; a still image gives one frame held for every unit. `audio=` replaces the soundtrack
with an external audio file (one shorter than the video is padded to it when streamed:
`Framer.plan`'s `video_fit`).

Truncated files: an MP4/MOV cut before its index (the usual case for a recording that was
interrupted, since the index is written last) cannot be opened and raises `MediaError`
("truncated or damaged MP4/MOV"). When the index is at the front ("faststart"), whatever is
readable is decoded and one `MediaWarning` says where the media stops; frames past that
point are held like any clip's end.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from duplex_client.framing.sources import FrameSampler, PcmSource
from duplex_client.media.audio import AvAudio, open_audio
from duplex_client.media.errors import MediaError
from duplex_client.media.frames import ClipFrames, check_sampling
from duplex_client.media.image import ImageFrameSource
from duplex_client.media.probe import MediaInfo, probe


@dataclass(slots=True)
class Clip:
    """What `open_clip` found: the probe facts and the sources it opened (either may be None)."""

    media: MediaInfo
    audio: PcmSource | None
    frames: FrameSampler | None

    @property
    def duration_ms(self) -> int:
        """How long the stream lasts: the audio's length if there is audio, else the video's."""
        if self.audio is not None:
            return int(getattr(self.audio, "duration_ms", 0))
        return self.frames.duration_ms if self.frames is not None else 0

    def info(self) -> dict[str, Any]:
        """The timeline's `audio_source` and `video` objects, and the probe facts."""
        return {
            "audio_source": self.audio.info() if self.audio is not None else None,
            "video": self.frames.info() if self.frames is not None else None,
            "media": self.media.to_dict(),
        }

    def close(self) -> None:
        """Release the video decoder (audio sources hold nothing between iterations)."""
        close = getattr(self.frames, "close", None)
        if close is not None:
            close()

    def __enter__(self) -> Clip:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_clip(
    path: str | os.PathLike[str],
    *,
    fps: float = 1.0,
    frame_max_side: int = 0,
    jpeg_quality: int = 90,
    stack_frames: int = 1,
    audio: str | os.PathLike[str] | None = None,
) -> Clip:
    """Probe a media file and open its sources; bad input raises a one-line `MediaError`."""
    check_sampling(fps, frame_max_side, jpeg_quality, stack_frames)
    media = probe(path)
    video = media.video
    if video is None and media.audio is None:
        kinds = ", ".join(s.kind for s in media.streams) or "none"
        raise MediaError(path, f"has no audio or video stream (streams: {kinds})")
    if video is not None and not video.decodable:
        raise MediaError(
            path, f"unsupported video codec (PyAV has no decoder for stream #{video.index})"
        )
    frames: FrameSampler | None = None
    if media.is_image:
        frames = ImageFrameSource(path, frame_max_side=frame_max_side, jpeg_quality=jpeg_quality)
    elif video is not None:
        frames = ClipFrames(
            path,
            fps=fps,
            frame_max_side=frame_max_side,
            jpeg_quality=jpeg_quality,
            stack_frames=stack_frames,
            media=media,
        )
    pcm: PcmSource | None = None
    if audio is not None:
        pcm = open_audio(audio)
    elif video is None:
        pcm = open_audio(path, media=media)
    elif media.audio is not None:
        pcm = AvAudio(path, kind="video_soundtrack", media=media)
    return Clip(media=media, audio=pcm, frames=frames)
