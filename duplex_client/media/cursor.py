"""Forward-only video decoding: the source frame shown at non-decreasing times, decoding little.

`VideoCursor.frame_at(t)` returns the frame on screen at media time `t` (the last frame with
pts <= t; the first frame for a `t` before it). Packets are read ahead of the decoder (up
to the first one decoded after `t`), and when a keyframe at or before the earliest time still
wanted lies among them, the packets before it are dropped undecoded and the decoder restarts
there. So sampling a clip at 1 fps decodes only from the last keyframe before each sample:
a clip with 1 s GOPs costs about one decoded frame per sample, a long-GOP clip costs every
reference frame (non-reference frames shown before the one asked for are not decoded:
`SKIP_NONREF`). Memory holds the packets of at most one read-ahead window, bounded by
`PENDING_CAP_BYTES`, and a few decoded frames.

Damaged input is decoded as far as it is readable: an undecodable packet is skipped and a
stream that ends before the length its container declares raises one `MediaWarning`.
"""

from __future__ import annotations

import os
from collections import deque
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

from duplex_client.media.errors import MediaError, MediaWarning, av_reason, warn_media
from duplex_client.media.probe import normalize_rotation, open_input, origin_seconds

if TYPE_CHECKING:
    from collections.abc import Iterator

    from av.container import InputContainer
    from av.packet import Packet
    from av.video.frame import VideoFrame
    from av.video.stream import VideoStream

#: The decoder's threading. Frame threads ("AUTO") cost a context and frame pool per thread
#: and delay output by a frame per thread, for no gain when streams are decoded in parallel
#: by the planning pool: measured at 8 streams of 720p30 sampled at 1 fps, 21.6 against
#: 16.2 MB of RSS per stream and 7.0 against 6.5 ms CPU per stream-second (benchmarks/README).
#: Slice threads only help files encoded with several slices per frame.
DECODER_THREADS = "SLICE"
#: Skip decoding non-reference frames shown before the frame asked for (no later frame needs
#: them, and the one asked for is decoded the same). B-frames that are references (x264's
#: B-pyramid) are not skipped, so this stays exact: tests/unit/media/test_exact_frames.py
#: compares the pixels with a full decode. False decodes them (tests compare).
SKIP_NONREF = True
#: Read-ahead stops growing past this many bytes of undecoded packets.
PENDING_CAP_BYTES = 64 * 1024 * 1024
#: A stream ending this much before its declared length is reported as truncated.
TRUNCATION_TOLERANCE = Fraction(1, 2)


@dataclass(frozen=True, slots=True)
class ShownFrame:
    """A decoded frame and its presentation time (seconds from the file's media time 0)."""

    time: Fraction
    frame: VideoFrame

    @property
    def pts_ms(self) -> int:
        """Presentation time in whole milliseconds (never negative)."""
        return max(0, round(self.time * 1000))


class VideoCursor:
    """Decodes one video stream forward; ask for non-decreasing times. Single use: `close()`."""

    def __init__(self, path: str | os.PathLike[str], *, thread_type: str = DECODER_THREADS) -> None:
        import av

        self.path = os.fspath(path)
        self._opened = open_input(path)
        container: InputContainer = self._opened.__enter__()
        try:
            streams = [s for s in container.streams.video if not _attached_pic(s)]
            if not streams:
                raise MediaError(path, "has no video stream")
            stream = streams[0]
            if stream.codec_context is None:
                raise MediaError(path, "unsupported video codec (PyAV has no decoder for it)")
            stream.thread_type = thread_type
        except BaseException:
            self._opened.__exit__(None, None, None)
            raise
        self._av_error: type[Exception] = av.FFmpegError
        self._stream: VideoStream = stream
        self._tb = stream.time_base or Fraction(1, 90000)
        self._origin = origin_seconds(container)
        rate = stream.average_rate or stream.guessed_rate or Fraction(30)
        self._frame_ticks = max(1, round(1 / (rate * self._tb)))
        self._declared_end = _declared_end_ticks(stream)
        self._demuxer: Iterator[Packet[VideoStream]] = container.demux(stream)
        self._pending: deque[Packet[VideoStream]] = deque()
        self._pending_bytes = 0
        self._queue: deque[VideoFrame] = deque()
        self._cur: VideoFrame | None = None
        self._floor = -(2**62)
        self._last_limit = -(2**62)
        self._max_pts: int | None = None
        self._max_end: int | None = None
        self._last_order: int | None = None
        self._demux_done = False
        self._drained = False
        self._need_flush = False
        self._skip_below: int | None = None
        self._nonref_below: int | None = None
        self._skipping = False
        self._rotation: int | None = None
        self._warned: set[str] = set()
        self.decoded_frames = 0
        self.dropped_packets = 0
        self.closed = False

    # --- public -------------------------------------------------------------------------

    @property
    def rotation_deg(self) -> int:
        """Display rotation of the decoded frames (ffprobe convention; 0 until a frame)."""
        return self._rotation or 0

    @property
    def sample_aspect_ratio(self) -> Fraction | None:
        """Pixel aspect ratio of the stream (None when unknown)."""
        return self._stream.sample_aspect_ratio

    def release_before(self, t: Fraction) -> None:
        """Promise that no frame before media time `t` will be asked for again."""
        self._floor = max(self._floor, self._ticks(t))

    def frame_at(self, t: Fraction, *, upcoming: Fraction | None = None) -> ShownFrame | None:
        """The frame on screen at media time `t` (None only if the stream has no frame).

        `upcoming` promises that the next request is for `upcoming` or later: when a keyframe
        lies between `t` and it, the decoder is drained right after the frame at `t` instead
        of decoding further frames that would be thrown away at that keyframe.
        """
        limit = self._ticks(t)
        if limit < max(self._last_limit, self._floor):
            raise ValueError("VideoCursor.frame_at: asked for a time before an earlier one")
        self._last_limit = limit
        self._floor = limit
        self._read_ahead(limit)
        self._jump()
        if SKIP_NONREF:  # the frame shown at `limit` is at or after the latest pts below it
            shown = (p.pts for p in self._pending if p.pts is not None and p.pts <= limit)
            self._nonref_below = max(shown, default=None)
        if upcoming is not None and self._drain_point(limit, self._ticks(upcoming)):
            self._feed_through(limit)
            self._drain()
            self._drained = False
            self._need_flush = True  # the next feed is the keyframe found above
            self._floor = max(self._floor, self._ticks(upcoming))
            self._advance(limit)
        else:
            self._decode_past(limit)
        if self._cur is None and self._queue:
            self._cur = self._queue.popleft()
        if self._cur is None:
            return None
        return ShownFrame(Fraction(self._cur.pts or 0) * self._tb - self._origin, self._cur)

    def contains(self, t: Fraction) -> bool:
        """Whether some frame is on screen at media time `t` (reads packets, decodes nothing)."""
        limit = self._ticks(t)
        while (self._max_pts is None or self._max_pts <= limit) and not self._demux_done:
            if self._pending_bytes > PENDING_CAP_BYTES:
                return self._declared_end is not None and limit < self._declared_end
            packet = self._read()
            if packet is None:
                break
            self._pending.append(packet)
            self._pending_bytes += packet.size
            if packet.is_keyframe:
                self._jump()
        if self._max_pts is not None and self._max_pts > limit:
            return True
        return self._max_end is not None and limit < self._max_end

    def end_time(self) -> Fraction | None:
        """Where the last frame stops being shown, once the whole stream has been read.

        That is the largest packet pts + duration. Containers give durations in decode
        order, so for variable-frame-rate video with B-frames this can be a frame late.
        """
        if not self._demux_done or self._max_end is None:
            return None
        return Fraction(self._max_end) * self._tb - self._origin

    def close(self) -> None:
        """Release the file and the decoder."""
        if not self.closed:
            self.closed = True
            self._pending.clear()
            self._queue.clear()
            self._cur = None
            self._opened.__exit__(None, None, None)

    # --- reading ------------------------------------------------------------------------

    def _ticks(self, t: Fraction) -> int:
        return int((Fraction(t) + self._origin) // self._tb)

    def _read(self) -> Packet[VideoStream] | None:
        while not self._demux_done:
            try:
                packet = next(self._demuxer)
            except StopIteration:
                self._finish_demux()
                return None
            except self._av_error as exc:
                self._warn("read", f"video unreadable after this point ({av_reason(exc)})")
                self._finish_demux()
                return None
            if packet.size == 0:
                continue
            self._note(packet)
            return packet
        return None

    def _note(self, packet: Packet[VideoStream]) -> None:
        pts = packet.pts if packet.pts is not None else packet.dts
        if pts is not None:
            end = pts + (packet.duration or self._frame_ticks)
            self._max_pts = pts if self._max_pts is None else max(self._max_pts, pts)
            self._max_end = end if self._max_end is None else max(self._max_end, end)
        order = packet.dts if packet.dts is not None else pts
        self._last_order = order if order is not None else 2**62

    def _finish_demux(self) -> None:
        self._demux_done = True
        if self._declared_end is None or self._max_end is None:
            return
        missing = Fraction(self._declared_end - self._max_end) * self._tb
        if missing > TRUNCATION_TOLERANCE:
            got = float(Fraction(self._max_end) * self._tb - self._origin)
            want = float(Fraction(self._declared_end) * self._tb - self._origin)
            self._warn(
                "truncated",
                f"truncated: video ends at {got:.2f} s of the {want:.2f} s the file declares;"
                " using what is readable",
            )

    def _read_ahead(self, limit: int) -> None:
        """Read packets until one decodes after `limit`, the file ends, or the cap is hit."""
        while not self._demux_done and self._pending_bytes <= PENDING_CAP_BYTES:
            if self._last_order is not None and self._last_order > limit:
                return
            packet = self._read()
            if packet is None:
                return
            self._pending.append(packet)
            self._pending_bytes += packet.size

    def _drain_point(self, limit: int, upcoming: int) -> bool:
        """Whether a keyframe in (limit, upcoming] follows every pending packet shown by limit."""
        if upcoming <= limit:
            return False
        self._read_ahead(upcoming)
        last_needed = -1
        for i, packet in enumerate(self._pending):
            if packet.pts is None:
                return False
            if packet.pts <= limit:
                last_needed = i
            elif packet.is_keyframe and packet.pts <= upcoming and i > last_needed:
                return True
        return False

    def _feed_through(self, limit: int) -> None:
        """Feed pending packets up to the last one (in decode order) shown by `limit`."""
        last = max((i for i, p in enumerate(self._pending) if (p.pts or 0) <= limit), default=-1)
        for _ in range(last + 1):
            self._feed(self._pop_pending())
            self._advance(limit)  # hold one decoded frame, not a second's worth

    def _jump(self) -> None:
        """Drop pending packets before the last keyframe at or before the floor."""
        target = -1
        for i, packet in enumerate(self._pending):
            if packet.is_keyframe and packet.pts is not None and packet.pts <= self._floor:
                target = i
        if target <= 0:
            return
        for _ in range(target):
            self._pop_pending()
        self.dropped_packets += target
        self._need_flush = True

    # --- decoding -----------------------------------------------------------------------

    def _decode_past(self, limit: int) -> None:
        """Decode until a frame after `limit` comes out (or the stream ends)."""
        while True:
            self._advance(limit)
            if self._queue:
                break
            if self._pending:
                self._feed(self._pop_pending())
                continue
            packet = self._read()
            if packet is not None:
                self._feed(packet)
            elif not self._drained:
                self._drain()
            else:
                break

    def _pop_pending(self) -> Packet[VideoStream]:
        packet = self._pending.popleft()
        self._pending_bytes -= packet.size
        return packet

    def _feed(self, packet: Packet[VideoStream]) -> None:
        if self._need_flush:  # restarting at a keyframe: forget the old references
            self._stream.codec_context.flush_buffers()
            self._queue.clear()
            self._need_flush = False
            if packet.is_keyframe:
                self._skip_below = packet.pts
        skip = self._skip_below
        if skip is not None and packet.pts is not None and packet.pts < skip:
            self.dropped_packets += 1  # leading frames of an open GOP we jumped into
            return
        below = self._nonref_below
        skipping = below is not None and packet.pts is not None and packet.pts < below
        if skipping != self._skipping:
            self._stream.codec_context.skip_frame = "NONREF" if skipping else "DEFAULT"
            self._skipping = skipping
        try:
            frames = self._stream.decode(packet)
        except self._av_error as exc:
            self._warn("decode", f"skipping undecodable video data ({av_reason(exc)})")
            return
        for frame in frames:
            self._push(frame)

    def _drain(self) -> None:
        self._drained = True
        try:
            frames = self._stream.decode(None)
        except self._av_error as exc:
            self._warn("decode", f"skipping undecodable video data ({av_reason(exc)})")
            return
        for frame in frames:
            self._push(frame)

    def _push(self, frame: VideoFrame) -> None:
        self.decoded_frames += 1
        if frame.pts is None:
            last = self._queue[-1] if self._queue else self._cur
            frame.pts = (last.pts or 0) + self._frame_ticks if last is not None else 0
        if self._rotation is None:
            self._rotation = normalize_rotation(frame.rotation)
        self._queue.append(frame)

    def _advance(self, limit: int) -> None:
        while self._queue and (self._queue[0].pts or 0) <= limit:
            self._cur = self._queue.popleft()

    def _warn(self, key: str, problem: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            warn_media(MediaWarning(f"{self.path}: {problem}"), stacklevel=4)


def _attached_pic(stream: VideoStream) -> bool:
    import av.stream

    return bool(int(stream.disposition) & int(av.stream.Disposition.attached_pic))


def _declared_end_ticks(stream: VideoStream) -> int | None:
    if not stream.duration:
        return None
    return int(stream.start_time or 0) + int(stream.duration)
