"""The unit math both framers share: cumulative audio, the open unit and numbering → appends."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace

from duplex_client.framing.history import SentUnit, UnitHistory
from duplex_client.framing.plan import FramerConfig, PlannedAppend, Segment, StreamPosition
from duplex_client.framing.sources import FrameGroup
from duplex_client.framing.units import ms_to_samples, samples_to_ms
from duplex_client.protocol.capabilities import UnitKind

#: Gives the frame group of a unit spanning media [start_ms, end_ms) when an append closes it.
FramePicker = Callable[[int, int], FrameGroup | None]


class FramingError(ValueError):
    """The input cannot be framed for this session (e.g. video required but no frames)."""


class UnitWriter:
    """Turns PCM and frame groups into `PlannedAppend`s on the session's unit grid.

    It holds the timelines' state (media time, cumulative audio, the open audio unit and
    the next `unit_index`, all in samples) and knows where appends are cut: chunks are
    phased from the open unit's start, and each unit boundary is a cut. It never decides
    what to send; the file framer (`Framer`) and the live framer (`LiveFramer`) do.
    """

    def __init__(self, config: FramerConfig, position: StreamPosition) -> None:
        self.config = config
        rate = config.grid.sample_rate_hz
        self.media = ms_to_samples(position.media_ms, rate)
        self.unit_index = position.unit_index
        self.audio = position.audio_samples
        self.audio_unit = position.audio_unit_index
        self.unit_start = position.unit_start_samples
        self.appends = 0
        self.history = UnitHistory()

    def unit_end(self) -> int:
        """Cumulative sample at which the open audio unit closes."""
        return self.unit_start + self.config.grid.unit_length_samples(self.audio_unit)

    def unit_left(self) -> int:
        """Samples still missing from the open audio unit."""
        return self.unit_end() - self.audio

    @property
    def unit_open(self) -> bool:
        """Whether the open audio unit is partly filled."""
        return self.audio > self.unit_start

    def chunk_left(self) -> int:
        """Samples up to the next append cut (a chunk boundary or the unit's end)."""
        end = self.unit_end()
        step = end - self.unit_start if self.config.video_required else self.config.chunk_samples
        into = self.audio - self.unit_start
        return min(self.unit_start + (into // step + 1) * step, end) - self.audio

    def fill(
        self,
        pcm: bytes,
        segment: Segment,
        is_speech: bool | None,
        pick: FramePicker,
        *,
        pad_from: int | None = None,
        fallback: bool = False,
    ) -> Iterator[PlannedAppend]:
        """Appends for `pcm`, which fits in the open unit; `pad_from` bytes on are silence."""
        total = len(pcm) // self.config.sample_width
        done = 0
        while done < total:
            n = min(self.chunk_left(), total - done)
            speech = (
                False
                if pad_from is not None and done * self.config.sample_width >= pad_from
                else is_speech
            )
            piece = pcm[done * self.config.sample_width : (done + n) * self.config.sample_width]
            yield self._audio_append(piece, segment, speech, pick, fallback)
            done += n

    def _audio_append(
        self,
        piece: bytes,
        segment: Segment,
        is_speech: bool | None,
        pick: FramePicker,
        fallback: bool,
    ) -> PlannedAppend:
        rate = self.config.grid.sample_rate_hz
        unit_end = self.unit_end()
        n = len(piece) // self.config.sample_width
        start, end = self.audio, self.audio + n
        m0, m1 = self.media, self.media + n
        frames: FrameGroup | None = None
        kind: UnitKind | None = None
        index: int | None = None
        if end == unit_end:
            unit_len = unit_end - self.unit_start
            frames = pick(samples_to_ms(m1 - unit_len, rate), samples_to_ms(m1, rate))
            if frames is None and self.config.video_required:
                raise FramingError("the session requires video but a unit has no frame")
            kind = UnitKind.AUDIO if frames is None else UnitKind.OMNI
            index = self.unit_index
            self.history.closed(SentUnit(index, self.audio_unit, self.unit_start, end))
            self.unit_index += 1
            self.audio_unit += 1
            self.unit_start = end
        self.audio, self.media = end, m1
        self.appends += 1
        self.history.sent_append(end)
        return PlannedAppend(
            segment=segment,
            pcm=piece,
            audio_start_samples=start,
            audio_end_samples=end,
            duration_ms=samples_to_ms(n, rate),
            audio_end_ms=samples_to_ms(end, rate),
            is_speech=is_speech,
            frames=frames,
            unit_kind=kind,
            unit_index=index,
            media_start_ms=samples_to_ms(m0, rate),
            media_end_ms=samples_to_ms(m1, rate),
            fallback=fallback,
        )

    def vision(self, segment: Segment, frames: FrameGroup, m0: int, m1: int) -> PlannedAppend:
        """A frame-only unit spanning media samples [m0, m1) (media time is not moved)."""
        rate = self.config.grid.sample_rate_hz
        index = self.unit_index
        self.unit_index += 1
        self.appends += 1
        self.history.closed(SentUnit(index, None, self.audio, self.audio))
        return PlannedAppend(
            segment=segment,
            pcm=b"",
            audio_start_samples=self.audio,
            audio_end_samples=self.audio,
            duration_ms=0,
            audio_end_ms=samples_to_ms(self.audio, rate),
            is_speech=False,
            frames=frames,
            unit_kind=UnitKind.VISION,
            unit_index=index,
            media_start_ms=samples_to_ms(m0, rate),
            media_end_ms=samples_to_ms(m1, rate),
        )

    def reanchor(self, at_samples: int, *, slack: int = 0) -> int:
        """A final commit sealed the turn at cumulative `at_samples` (protocol.md §3.1).

        Inside a unit it closes that unit early (the residual takes its `unit_index`) and
        the grid restarts there. The unit may be the open one or, for a server commit heard
        late, one already closed on the grid the server left: the numbering then follows
        the server's from the commit on. `at_samples` within `slack` of an append end counts
        as that end (the server's ms are rounded); on a boundary nothing changes. Returns how
        far the next `unit_index` moved (0 when nothing changed, or when a late commit moved
        the grid but the numbering came out where it was).
        """
        at = self.history.snap(min(at_samples, self.audio), slack)
        open_unit = SentUnit(self.unit_index, self.audio_unit, self.unit_start, self.audio)
        state = self.history.replay(at, open_unit, self.audio, self.config.grid.unit_length_samples)
        if state is None:
            return 0
        moved = state.unit_index - self.unit_index
        self.unit_index, self.audio_unit, self.unit_start = (
            state.unit_index,
            state.audio_unit,
            state.unit_start,
        )
        return moved

    def relabel(self, append: PlannedAppend) -> PlannedAppend:
        """An audio append planned before a re-anchor, labelled as the server now sees it.

        Closing a unit on the new grid (its end within the append) it takes that unit's index
        (AUDIO unless it already carries frames); closing none it loses its unit and frames (an
        append with frames must close a unit). Its PCM and media span stay as planned.
        """
        if not append.pcm:
            return append
        unit = self.history.closing_within(append.audio_start_samples, append.audio_end_samples)
        if unit is None:
            return replace(append, unit_kind=None, unit_index=None, frames=None)
        kind = UnitKind.AUDIO if append.frames is None else UnitKind.OMNI
        return replace(append, unit_kind=kind, unit_index=unit.unit_index)

    def position(
        self, *, clip_had_audio: bool = True, last_frames: FrameGroup | None = None
    ) -> StreamPosition:
        """The timelines' state as a `StreamPosition`."""
        return StreamPosition(
            media_ms=samples_to_ms(self.media, self.config.grid.sample_rate_hz),
            unit_index=self.unit_index,
            audio_samples=self.audio,
            audio_unit_index=self.audio_unit,
            unit_start_samples=self.unit_start,
            clip_had_audio=clip_had_audio,
            last_frames=last_frames,
        )
