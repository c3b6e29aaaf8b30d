"""The live (push) framer: captured audio blocks and the latest camera frame in, appends out.

Media time is the capture clock: sample 0 of the first captured block is media time 0, and
every block pushed advances it by its length, uploaded or not (protocol.md §10). An append
is released as soon as its capture completes: a chunk of uploaded PCM once its last sample
is captured, a frame-only unit once its span has passed. Frames ride the append that closes
their unit and are the latest camera frame at that moment.

While uploads are off (muted microphone, push-to-talk released, echo gate) and a camera is
on, frames keep the unit cadence: a partly filled audio unit is first topped up with zero
PCM (`fallback`), then VISION units follow, one per `chunk_period_ms`; when VISION is not
legal, zero PCM units carry the frames instead. Without a camera nothing is sent.
"""

from __future__ import annotations

from typing import Protocol

from duplex_client.framing.plan import FramerConfig, PlannedAppend, Segment, StreamPosition
from duplex_client.framing.sources import FrameGroup
from duplex_client.framing.writer import UnitWriter


class FrameFeed(Protocol):
    """The live camera as the framer sees it."""

    def ready(self) -> bool:
        """Whether a frame has been captured (cheap; called for every block)."""
        ...

    def latest(self) -> FrameGroup | None:
        """The latest captured frame, encoded (called when a unit closes)."""
        ...


class LiveFramer:
    """Cuts a live capture into appends on the unit grid, one pushed block at a time."""

    def __init__(
        self,
        config: FramerConfig | None = None,
        position: StreamPosition | None = None,
        *,
        segment: Segment = "live",
    ) -> None:
        self.config = config or FramerConfig()
        self.segment: Segment = segment
        self._w = UnitWriter(self.config, position or StreamPosition())
        self._buf = bytearray()
        self._fallback = False  # what the buffered PCM is: captured audio or zero stand-ins
        self._camera: FrameFeed | None = None
        self._vision_from: int | None = None
        self._last_frame: FrameGroup | None = None
        self.captured_samples = 0
        self.uploaded_samples = 0
        self._bps = self.config.sample_width  # bytes per sample of the session's format

    # --- state ---

    @property
    def position(self) -> StreamPosition:
        """Where the released appends have left the timelines (buffered PCM not included)."""
        return self._w.position(last_frames=self._last_frame)

    @property
    def media_samples(self) -> int:
        """Media time of the capture head, in samples."""
        return self._w.media + len(self._buf) // self._bps

    @property
    def buffered_samples(self) -> int:
        """Uploaded (or stand-in) samples captured but not yet released."""
        return len(self._buf) // self._bps

    @property
    def unit_open(self) -> bool:
        """Whether an audio unit is partly filled (released or buffered audio in it)."""
        return self._w.unit_open or bool(self._buf)

    @property
    def camera_on(self) -> bool:
        """Whether a camera provides frames."""
        return self._camera is not None

    def set_camera(self, feed: FrameFeed | None) -> None:
        """Frames come from `feed` from now on; None turns the camera off."""
        self._camera = feed
        if feed is None:
            self._vision_from = None

    def can_upload(self) -> bool:
        """Whether audio may be uploaded now (video-required sessions need a camera frame)."""
        if not self.config.audio_allowed:
            return False
        if not self.config.video_required:
            return True
        return self._camera is not None and self._camera.ready()

    # --- input ---

    def push(
        self, pcm: bytes, *, upload: bool, is_speech: bool | None = None
    ) -> list[PlannedAppend]:
        """One captured block; returns the appends whose capture it completed.

        `upload` False means the block is not sent (muted, push-to-talk released): media
        time still advances and frame-only units keep their cadence.
        """
        if len(pcm) % self._bps:
            raise ValueError(f"a PCM block must hold whole {self._bps}-byte samples")
        n = len(pcm) // self._bps
        self.captured_samples += n
        if upload and self.can_upload():
            self._vision_from = None  # the frame rides the next audio unit instead
            self.uploaded_samples += n
            return self._buffer(pcm, is_speech, fallback=False)
        return self.idle(n)

    def idle(self, samples: int) -> list[PlannedAppend]:
        """`samples` of media time pass without uploaded audio."""
        out = self.flush() if not self._fallback else []
        left = samples
        while left > 0:
            legal = self.config.vision_allowed or self.config.audio_allowed
            if self._camera is None or not legal:
                self._drop_fallback()
                self._w.media += left
                break
            if self.unit_open or not self.config.vision_allowed:
                room = left
                if self.config.vision_allowed:
                    # 0 when a server commit moved the unit's end before what is buffered:
                    # the buffer is released up to it first
                    room = max(0, min(left, self._w.unit_left() - len(self._buf) // self._bps))
                out += self._buffer(bytes(room * self._bps), False, fallback=True)
                left -= room
                continue
            start = self._w.media if self._vision_from is None else self._vision_from
            due = start + self.config.grid.period_samples
            take = min(left, due - self._w.media)
            self._w.media += take
            left -= take
            self._vision_from = start
            if self._w.media == due:
                self._vision_from = due
                frames = self._pick_frame()
                if frames is not None:
                    out.append(self._w.vision(self.segment, frames, start, due))
        return out

    def flush(self) -> list[PlannedAppend]:
        """Release buffered PCM now, as a short append (its capture has completed)."""
        if not self._buf:
            return []
        pcm = bytes(self._buf)
        self._buf.clear()
        speech = False if self._fallback else None
        out = list(self._w.fill(pcm, self.segment, speech, self._pick, fallback=self._fallback))
        self._fallback = False
        return out

    def commit(self) -> list[PlannedAppend]:
        """The appends to send before a final commit (the buffer); then call `committed()`."""
        return self.flush()

    def committed(self, audio_end_samples: int | None = None) -> int:
        """A final commit sealed the turn at `audio_end_samples` (default: all released audio).

        Re-anchors the grid when the commit fell inside a unit, the open one or, for a server
        commit heard late, an earlier one (protocol.md §10); a position within 1 ms of an
        append end counts as that end (the server's ms are rounded). Returns how far the
        next `unit_index` moved (0 also when a late commit left the numbering where it was).
        """
        w = self._w
        at = w.audio if audio_end_samples is None else audio_end_samples
        before = w.unit_start
        moved = w.reanchor(at, slack=w.config.grid.sample_rate_hz // 1000)
        if w.unit_start != before:
            self._vision_from = None
        return moved

    def relabel(self, append: PlannedAppend) -> PlannedAppend:
        """An append released before `committed()` moved the grid, labelled for the new grid."""
        return self._w.relabel(append)

    # --- internals ---

    def _buffer(self, pcm: bytes, is_speech: bool | None, *, fallback: bool) -> list[PlannedAppend]:
        out: list[PlannedAppend] = []
        if self._buf and self._fallback != fallback:
            out += self.flush()
        self._fallback = fallback
        self._buf += pcm
        speech = False if fallback else is_speech
        while self._buf and len(self._buf) >= (need := self._w.chunk_left() * self._bps):
            piece = bytes(self._buf[:need])
            del self._buf[:need]
            out += self._w.fill(piece, self.segment, speech, self._pick, fallback=fallback)
        return out

    def _drop_fallback(self) -> None:
        """Zero stand-ins not yet released are not sent once the camera is gone."""
        if self._fallback and self._buf:
            self._w.media += len(self._buf) // self._bps
            self._buf.clear()
            self._fallback = False

    def _pick_frame(self) -> FrameGroup | None:
        frames = None if self._camera is None else self._camera.latest()
        if frames is not None:
            self._last_frame = frames
        return frames

    def _pick(self, start_ms: int, end_ms: int) -> FrameGroup | None:
        return self._pick_frame()
