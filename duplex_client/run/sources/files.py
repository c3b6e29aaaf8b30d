"""A clip, a WAV (or other audio file) and/or a still image, streamed on the media clock."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from duplex_client.analysis.playback import HeardOutput
from duplex_client.analysis.virtual_player import VirtualPlayer
from duplex_client.client.streaming import StreamResult, stream
from duplex_client.framing.clock import MediaClock
from duplex_client.framing.sources import AudioVisualSource, MediaInput, PcmSource
from duplex_client.framing.writer import FramingError
from duplex_client.run.checks import FILE_FRAME_MAX_SIDE, FILE_JPEG_QUALITY, frames_note
from duplex_client.run.options import InputKind, RunOptions
from duplex_client.run.progress import RunProgress
from duplex_client.run.result import RunResult
from duplex_client.run.sources import SourceLink
from duplex_client.usage import UsageError

if TYPE_CHECKING:
    from duplex_client.media.plan_cache import PlanCache


def plan_cache(options: RunOptions, inputs: InputKind = "files") -> PlanCache | None:
    """The plan cache a file run uses (None: off, or not a file run)."""
    if inputs != "files" or not options.plan_cache_on():
        return None
    from duplex_client.media.plan_cache import PlanCache

    return PlanCache(options.plan_cache_dir)


def open_source(options: RunOptions) -> tuple[AudioVisualSource, Any]:
    """Open the media the options name; returns the source and an object to close."""
    from duplex_client.media import ImageFrameSource, open_audio, open_clip
    from duplex_client.media.plan_cache import cached_audio, cached_clip

    max_side = FILE_FRAME_MAX_SIDE if options.frame_max_side is None else options.frame_max_side
    quality = FILE_JPEG_QUALITY if options.jpeg_quality is None else options.jpeg_quality
    if options.input_video:
        clip = open_clip(
            options.input_video,
            fps=options.video_fps,
            frame_max_side=max_side,
            jpeg_quality=quality,
            stack_frames=options.stack_frames,
            audio=options.input_audio,
        )
        if clip.media.is_image:  # no length and no soundtrack: it is what input_image is for
            clip.close()
            raise UsageError(
                f"{options.input_video}: a still image: use input_image",
                param="input_video",
                keywords=["input_image"],
            )
        cache = plan_cache(options)
        if cache is not None:
            clip = cached_clip(clip, cache)
        return clip, clip
    audio: PcmSource | None = open_audio(options.input_audio) if options.input_audio else None
    cache = plan_cache(options)
    if audio is not None and cache is not None:
        audio = cached_audio(audio, cache)
    image = None
    if options.input_image:
        image = ImageFrameSource(options.input_image, frame_max_side=max_side, jpeg_quality=quality)
    return MediaInput(audio=audio, frames=image), None


def _opened(options: RunOptions) -> tuple[AudioVisualSource, Any]:
    """Open the media and hash the audio file (the timeline records it), in a worker."""
    source, closer = open_source(options)
    if source.audio is not None:
        source.audio.info()  # computes and keeps the file's sha256
    return source, closer


def _check_modalities(options: RunOptions, media: AudioVisualSource) -> None:
    """A preset whose family needs video on every unit, given no frames: `UsageError` now."""
    from duplex_client.families import preset_family

    chosen = preset_family(options.preset_name())
    if chosen is None or "video" not in chosen.required_modalities or media.frames is not None:
        return
    raise UsageError(
        f"preset {chosen.name} ({chosen.title}) requires video on every unit, and the input "
        "has no frames: give input_video with a video track, or input_image",
        param="preset",
        keywords=("preset", "input_video", "input_image"),
    )


class FileSource:
    """The options' input files, framed on the server's grid and paced on the media clock."""

    inputs: InputKind = "files"
    needs_decision = True
    benign_errors: frozenset[str] = frozenset()
    input_facts = None

    def __init__(self) -> None:
        self.media: AudioVisualSource | None = None
        self._closer: Any = None
        self._options: RunOptions | None = None
        self._media_ms = 0

    @property
    def media_ms(self) -> int:
        """The input's length (audio if any, else the video; the video when an external audio
        file shorter than it is padded to it) plus the tail silence."""
        return self._media_ms

    async def open(self, options: RunOptions, progress: RunProgress) -> None:
        """Probe the files off the loop (~20 ms a clip), where other sessions are paced."""
        self._options = options
        media, self._closer = await asyncio.to_thread(_opened, options)
        self.media = media
        audio_ms = video_ms = 0
        if media.audio is not None:
            audio_ms = int(media.audio.info().get("duration_ms") or 0)
        if media.frames is not None:
            video_ms = media.frames.duration_ms
        length = audio_ms if media.audio is not None else video_ms
        if options.input_audio and options.input_video and video_ms > audio_ms:
            if options.soundtrack == "full":
                progress.warn(
                    f"{options.input_audio} ({audio_ms} ms) is shorter than "
                    f"{options.input_video} ({video_ms} ms): soundtrack full sends it as is, so "
                    "the video after its end is not sent (trim or pad add silence instead)"
                )
            else:  # the framer pads the audio with silence to the video's end
                length = video_ms
        self._media_ms = length + round(options.tail_silence_s * 1000)
        _check_modalities(options, media)

    def output(self, options: RunOptions, clock: MediaClock, rate: int) -> HeardOutput | None:
        """The listener model on the media clock; none without real-time pacing."""
        return VirtualPlayer(clock, rate) if options.realtime else None

    async def send(self, link: SourceLink) -> StreamResult:
        """Stream the media, then the tail silence, and commit (where the session takes it)."""
        options = self._options
        assert options is not None, "open() first"
        if options.input_video:  # the unit grid is known now: say what video_fps amounts to
            period = link.client.capabilities.chunk_period_ms
            note = frames_note(options.video_fps, options.stack_frames, period)
            if note is not None:
                link.progress.warn(note)
        try:
            return await stream(
                link.client,
                self.media,
                tail_silence_s=options.tail_silence_s,
                realtime=options.realtime,
                chunk_ms=options.chunk_ms,
                soundtrack_policy=options.soundtrack,  # type: ignore[arg-type]
                timeline=link.timeline,
                clock=link.clock,
                on_sent=link.on_sent,
            )
        except FramingError as exc:
            if link.timeline.appends:  # it went wrong midway: a failed run, not bad input
                raise
            # Only the opened session's capabilities said so (a preset that names no
            # family): refused before anything was sent, with the bundle recording why.
            raise UsageError(
                f"the server refuses this input: {exc} (give input_video with a video "
                "track, or input_image)",
                keywords=("input_video", "input_image"),
            ) from None

    def complete(self, result: RunResult) -> None:
        """Nothing to add: a file run's result is the run's own."""

    async def close(self) -> None:
        """Close the decoder off the loop (it takes tens of ms)."""
        if self._closer is not None:
            closer, self._closer = self._closer, None
            await asyncio.shield(asyncio.to_thread(closer.close))
