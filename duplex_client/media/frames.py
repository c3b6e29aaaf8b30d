"""`ClipFrames`: the `FrameSampler` over a video file (fps grid, rotation, JPEG, composites).

Sampling (protocol.md §10): frame k is the source frame on screen at `k / fps` seconds; a
unit starting at `s` takes the latest sampled frame at or before `s`. With `stack_frames`
N > 1 the unit also carries a composite tiling the source frames shown at
`s + j·(e−s)/N` (j = 1..N−1) that lie inside the clip. A unit starting at or after the
video's end gets the last sampled frame with `held=True` and no composite.

"The frame at t" is the last frame whose pts is at or before t (the first frame for a t
before it): exactly the frame a decode of every frame shows at t, pixel for pixel
(tests/unit/media/test_exact_frames.py). Decoding is lazy and forward-only (`VideoCursor`):
it restarts at the last keyframe at or before each sample when one lies past what is decoded,
and skips non-reference frames no sample shows, so memory stays bounded for long clips.
Once the last grid frame inside the video is taken (without composites), the decoder, its
frame pool and the file are released; later units reuse that frame's JPEG.
Calls must come with non-decreasing `start_ms`; an earlier `start_ms` restarts decoding from
the top of the file (correct, but it decodes again). Call `close()` when done.
"""

from __future__ import annotations

import math
import os
from fractions import Fraction
from typing import Any

from duplex_client.framing.sources import EncodedImage, FrameGroup
from duplex_client.media.cursor import ShownFrame, VideoCursor
from duplex_client.media.jpeg import encode_jpeg, frame_to_bgr, tile
from duplex_client.media.probe import MediaInfo, normalize_rotation, probe


def check_sampling(fps: float, frame_max_side: int, jpeg_quality: int, stack_frames: int) -> None:
    """Raise `ValueError` for sampling settings that make no sense."""
    if not (isinstance(fps, int | float) and math.isfinite(fps) and fps > 0):
        raise ValueError(f"fps must be a positive number, got {fps!r}")
    if frame_max_side < 0:
        raise ValueError(f"frame_max_side must be >= 0, got {frame_max_side}")
    if not 1 <= jpeg_quality <= 100:
        raise ValueError(f"jpeg_quality must be 1..100, got {jpeg_quality}")
    if stack_frames < 1:
        raise ValueError(f"stack_frames must be >= 1, got {stack_frames}")


class ClipFrames:
    """Frames of a video file for the framer, sampled at `fps` and JPEG-encoded on demand."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        fps: float = 1.0,
        frame_max_side: int = 0,
        jpeg_quality: int = 90,
        stack_frames: int = 1,
        media: MediaInfo | None = None,
    ) -> None:
        check_sampling(fps, frame_max_side, jpeg_quality, stack_frames)
        self.path = os.fspath(path)
        self.media = media if media is not None else probe(path)
        self.fps = float(fps)
        self.frame_max_side = int(frame_max_side)
        self.jpeg_quality = int(jpeg_quality)
        self.stack_frames = int(stack_frames)
        self._rate = Fraction(fps).limit_denominator(1_000_000)
        self._cursor: VideoCursor | None = None
        self._last_start: int | None = None
        self._grid: dict[int, ShownFrame] = {}
        self._encoded: dict[int, EncodedImage] = {}
        self._held: EncodedImage | None = None
        self._held_index = -1
        self._end: Fraction | None = None  # set once the decoder is released after the last
        self._decoded_before = 0
        self._dropped_before = 0

    # --- FrameSampler -------------------------------------------------------------------

    @property
    def duration_ms(self) -> int:
        """Length of the video as the file declares it."""
        video = self.media.video
        return (video.duration_ms if video else None) or self.media.duration_ms

    def group_for_unit(self, start_ms: int, end_ms: int) -> FrameGroup | None:
        """Base frame (and composite) for the unit spanning media [start_ms, end_ms)."""
        if self._last_start is not None and start_ms < self._last_start:
            self._restart()
        self._last_start = start_ms
        start = Fraction(start_ms, 1000)
        k = math.floor(start * self._rate)
        if self._end is not None and self._held is not None:  # decoder released at the last
            return FrameGroup(base=self._held, held=start >= self._end)
        cursor = self._open_cursor()
        if not cursor.contains(start):
            return self._held_group(cursor, k)
        self._grid = {j: f for j, f in self._grid.items() if j >= k}
        cursor.release_before(start if k in self._grid else self._grid_time(k))
        shown = self._grid_frame(k)
        if shown is None:
            return None
        base = self._encode_base(shown)
        self._held, self._held_index = base, k
        composite = None
        if self.stack_frames > 1 and end_ms > start_ms:
            composite = self._composite(k, start, Fraction(end_ms, 1000), base.width)
        elif not cursor.contains(self._grid_time(k + 1)):
            self._release(cursor)
        return FrameGroup(base=base, composite=composite)

    @property
    def decoded_frames(self) -> int:
        """Video frames decoded so far (released decoders included)."""
        return self._decoded_before + (self._cursor.decoded_frames if self._cursor else 0)

    @property
    def dropped_packets(self) -> int:
        """Video packets skipped undecoded so far (released decoders included)."""
        return self._dropped_before + (self._cursor.dropped_packets if self._cursor else 0)

    @property
    def decoder_open(self) -> bool:
        """Whether a decoder (its frame pool, reference frames and the open file) is held."""
        return self._cursor is not None

    def info(self) -> dict[str, Any]:
        """The timeline's `video` object (protocol.md §10)."""
        video = self.media.video
        return {
            "kind": "file",
            "path": self.path,
            "duration_ms": self.duration_ms,
            "avg_fps": video.avg_fps if video else 0.0,
            "num_frames": video.num_frames if video else 0,
            "rotation_deg": self.media.rotation_deg,
            "sampling": "unit_start",
            "fps": self.fps,
            "stack_frames": self.stack_frames,
            "jpeg_quality": self.jpeg_quality,
            "frame_max_side": self.frame_max_side,
        }

    def close(self) -> None:
        """Release the decoder and the file (a later call reopens it)."""
        if self._cursor is not None:
            self._decoded_before += self._cursor.decoded_frames
            self._dropped_before += self._cursor.dropped_packets
            self._cursor.close()
            self._cursor = None
        self._grid.clear()

    def __enter__(self) -> ClipFrames:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- internals ----------------------------------------------------------------------

    def _open_cursor(self) -> VideoCursor:
        if self._cursor is None:
            self._cursor = VideoCursor(self.path)
        return self._cursor

    def _restart(self) -> None:
        self.close()
        self._held, self._held_index = None, -1
        self._end = None

    def _release(self, cursor: VideoCursor) -> None:
        """The last grid frame inside the video is taken: free the decoder and the file."""
        end = cursor.end_time()
        self._end = end if end is not None else Fraction(self.duration_ms, 1000)
        self.close()

    def _grid_time(self, k: int) -> Fraction:
        return Fraction(k) / self._rate

    def _frame_at(self, t: Fraction, upcoming: Fraction | None = None) -> ShownFrame | None:
        cursor = self._open_cursor()
        try:
            return cursor.frame_at(t, upcoming=upcoming)
        except ValueError:  # asked for a time already passed: decode again from the top
            self.close()
            return self._open_cursor().frame_at(t, upcoming=upcoming)

    def _grid_frame(self, k: int) -> ShownFrame | None:
        shown = self._grid.get(k)
        if shown is None:
            # Without composites the next frame wanted is grid frame k+1 or later.
            upcoming = self._grid_time(k + 1) if self.stack_frames == 1 else None
            shown = self._frame_at(self._grid_time(k), upcoming)
            if shown is not None:
                self._grid[k] = shown
        return shown

    def _held_group(self, cursor: VideoCursor, k: int) -> FrameGroup | None:
        """Past the video's end: the last grid frame inside the clip, marked held."""
        end = cursor.end_time()
        if end is None:
            end = Fraction(self.duration_ms, 1000)
        last = min(k, max(0, math.ceil(end * self._rate) - 1))
        if self._held is None or self._held_index != last:
            self._grid = {j: f for j, f in self._grid.items() if j >= last}
            shown = self._grid_frame(last)
            if shown is None:
                return None
            self._held, self._held_index = self._encode_base(shown), last
        return FrameGroup(base=self._held, held=True)

    def _composite(self, k: int, start: Fraction, end: Fraction, width: int) -> EncodedImage | None:
        cursor = self._open_cursor()
        n = self.stack_frames
        subs: list[ShownFrame] = []
        next_grid = k + 1
        for j in range(1, n):
            t = start + (end - start) * j / n
            if not cursor.contains(t):
                break
            while self._grid_time(next_grid) <= t:  # keep grid frames later units will need
                self._grid_frame(next_grid)
                next_grid += 1
            shown = self._frame_at(t)
            if shown is not None:
                subs.append(shown)
        if not subs:
            return None
        canvas = tile([self._upright(s) for s in subs], width)
        return EncodedImage(
            data=encode_jpeg(canvas, self.jpeg_quality),
            pts_ms=tuple(s.pts_ms for s in subs),
            width=int(canvas.shape[1]),
            height=int(canvas.shape[0]),
            role="composite",
        )

    def _upright(self, shown: ShownFrame) -> Any:
        return frame_to_bgr(
            shown.frame,
            rotation_deg=normalize_rotation(shown.frame.rotation),
            max_side=self.frame_max_side,
            sar=self._open_cursor().sample_aspect_ratio,
        )

    def _encode_base(self, shown: ShownFrame) -> EncodedImage:
        key = shown.frame.pts or 0
        cached = self._encoded.get(key)
        if cached is None:
            image = self._upright(shown)
            cached = EncodedImage(
                data=encode_jpeg(image, self.jpeg_quality),
                pts_ms=shown.pts_ms,
                width=int(image.shape[1]),
                height=int(image.shape[0]),
                role="base",
            )
            self._encoded = {key: cached}
        return cached
