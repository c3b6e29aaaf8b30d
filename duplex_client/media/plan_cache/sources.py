"""Cached twins of a file's sources: the decoded PCM and the sampled frames, served from disk.

`cached_clip(clip, cache)` wraps a clip's PCM source and frame sampler. The framer consumes
the twins as it would the originals; a hit serves the bytes the original would have made
(its PCM in the session's format, its JPEG frame groups per unit window) without opening a
decoder, and says again what the decode warned about. A miss decodes as usual and keeps the
result, written when the PCM has been read to its end or when the frames are closed. A video
window the entry lacks (another grid, a re-anchored unit) is decoded then and added.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from duplex_client.framing.pcm_format import PcmFormat
from duplex_client.framing.plan_cache import Window, frames_entry, frames_from_entry, plan_key
from duplex_client.framing.sources import FrameGroup, PcmSource
from duplex_client.media.audio import AvAudio, SoundFileAudio, file_sha256
from duplex_client.media.clip import Clip
from duplex_client.media.errors import MediaWarning, tee_media_warnings, warn_media
from duplex_client.media.frames import ClipFrames
from duplex_client.media.plan_cache.store import PlanCache

#: An entry is kept only up to this size (a long clip's frames beyond it are decoded each run),
#: so a stream never holds more than this of planned media in memory for the cache.
MAX_ENTRY_BYTES = 256 << 20


@functools.cache
def code_fingerprint() -> str:
    """The sha256 of the media package's source: any change to how bytes are made is a miss."""
    digest = hashlib.sha256()
    root = Path(__file__).resolve().parent.parent
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


@functools.cache
def _pcm_libraries() -> dict[str, str]:
    import av
    import numpy
    import soundfile

    return {
        "av": av.__version__,
        "libsndfile": str(soundfile.__libsndfile_version__),
        "numpy": numpy.__version__,
    }


@functools.cache
def _frame_libraries() -> dict[str, str]:
    import av
    import cv2
    import numpy

    return {"av": av.__version__, "cv2": cv2.__version__, "numpy": numpy.__version__}


class CachedPcm:
    """A file's PCM source, served from the plan cache once it has been decoded."""

    def __init__(self, inner: AvAudio | SoundFileAudio, cache: PlanCache) -> None:
        self.inner = inner
        self._cache = cache

    @property
    def duration_ms(self) -> int:
        """The source's length (exact once decoded or served)."""
        return self.inner.duration_ms

    @property
    def output(self) -> PcmFormat:
        """The format `chunks()` produces."""
        return self.inner.output

    def set_output(self, fmt: PcmFormat) -> None:
        """Produce `fmt` (the session's input format): part of the entry's key."""
        self.inner.set_output(fmt)

    def info(self) -> dict[str, Any]:
        """The source's own `audio_source` facts."""
        return self.inner.info()

    def key(self) -> str:
        """The entry's key: the file's sha256, how it is read and the output format."""
        source = self.inner
        params = {
            "sha256": source.info()["sha256"],
            "reader": type(source).__name__,
            "kind": source.kind,
            "stream": getattr(source, "stream_index", None),
            "output": {"encoding": source.output.encoding, "rate": source.output.sample_rate_hz},
            "libraries": _pcm_libraries(),
            "code": code_fingerprint(),
        }
        return plan_key("pcm", params)

    def chunks(self) -> Iterator[bytes]:
        """The PCM, about one second a chunk: from the cache, else decoded (and kept)."""
        if isinstance(self.inner, SoundFileAudio) and self.inner.native:
            yield from self.inner.chunks()  # read as is: nothing to save by keeping it
            return
        key = self.key()
        out = self.inner.output
        hit = self._cache.load("pcm", key)
        if hit is not None:
            meta, payload = hit
            self.inner.restore_decoded(len(payload) // out.sample_width)
            for message in meta.get("warnings", []):
                warn_media(MediaWarning(str(message)))
            step = out.sample_rate_hz * out.sample_width
            for at in range(0, len(payload), step):
                yield bytes(payload[at : at + step])
            return
        parts: list[bytes] = []
        size = 0
        said: list[str] = []
        decoded = self.inner.chunks()
        while True:
            with tee_media_warnings() as seen:
                chunk = next(decoded, None)
            said += [str(w) for w in seen]
            if chunk is None:
                break
            size += len(chunk)
            if size <= MAX_ENTRY_BYTES:
                parts.append(chunk)
            yield chunk
        if size <= MAX_ENTRY_BYTES:
            self._cache.store("pcm", key, {"warnings": said}, b"".join(parts))


class CachedFrames:
    """A video's frame sampler, served from the plan cache window by window."""

    def __init__(self, inner: ClipFrames, cache: PlanCache, sha256: str) -> None:
        self.inner = inner
        self._cache = cache
        self._sha256 = sha256
        self._windows: dict[Window, FrameGroup | None] | None = None
        self._said: list[str] = []
        self._added = 0
        self._bytes = 0

    @property
    def duration_ms(self) -> int:
        """Length of the video as the file declares it."""
        return self.inner.duration_ms

    def info(self) -> dict[str, Any]:
        """The timeline's `video` object."""
        return self.inner.info()

    def key(self) -> str:
        """The entry's key: the file's sha256 and every sampling and encoding parameter."""
        v = self.inner
        params = {
            "sha256": self._sha256,
            "fps": v.fps,
            "frame_max_side": v.frame_max_side,
            "jpeg_quality": v.jpeg_quality,
            "stack_frames": v.stack_frames,
            "libraries": _frame_libraries(),
            "code": code_fingerprint(),
        }
        return plan_key("frames", params)

    def group_for_unit(self, start_ms: int, end_ms: int) -> FrameGroup | None:
        """The unit's frame group: kept, else sampled from the video (and kept)."""
        windows = self._load()
        window = (start_ms, end_ms)
        if window in windows:
            return windows[window]
        with tee_media_warnings() as seen:
            group = self.inner.group_for_unit(start_ms, end_ms)
        self._said += [str(w) for w in seen]
        size = 0 if group is None else sum(len(img.data) for img in group.images)
        if self._bytes + size <= MAX_ENTRY_BYTES:
            windows[window] = group
            self._bytes += size
            self._added += 1
        return group

    def close(self) -> None:
        """Close the decoder; keep the windows this run sampled (merged with the entry's)."""
        self.inner.close()
        if not self._added:
            return
        self._added = 0
        windows = dict(self._windows or {})
        said = list(self._said)
        key = self.key()
        stored = self._cache.load("frames", key)  # another run may have added windows since
        if stored is not None:
            windows = {**frames_from_entry(*stored), **windows}
            said += [str(m) for m in stored[0].get("warnings", []) if str(m) not in said]
        meta, payload = frames_entry(windows)
        meta["warnings"] = said
        if len(payload) <= MAX_ENTRY_BYTES:
            self._cache.store("frames", key, meta, payload)

    def _load(self) -> dict[Window, FrameGroup | None]:
        if self._windows is None:
            self._windows = {}
            stored = self._cache.load("frames", self.key())
            if stored is not None:
                self._windows = frames_from_entry(*stored)
                self._bytes = len(stored[1])
                self._said = [str(m) for m in stored[0].get("warnings", [])]
                for message in self._said:
                    warn_media(MediaWarning(message))
        return self._windows


def cached_audio(audio: PcmSource, cache: PlanCache) -> PcmSource:
    """`audio` served through `cache` when it is a file that decodes (else as it is)."""
    if isinstance(audio, AvAudio | SoundFileAudio):
        return CachedPcm(audio, cache)
    return audio


def cached_clip(clip: Clip, cache: PlanCache, *, video_sha256: str | None = None) -> Clip:
    """`clip` with its decoded sources (file PCM, video frames) served through `cache`."""
    audio = None if clip.audio is None else cached_audio(clip.audio, cache)
    frames = clip.frames
    if isinstance(frames, ClipFrames):
        sha = video_sha256 if video_sha256 is not None else file_sha256(frames.path)
        frames = CachedFrames(frames, cache, sha)
    return Clip(media=clip.media, audio=audio, frames=frames)
