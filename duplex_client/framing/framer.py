"""The framer: PCM and frames in, appends on the server's unit grid out (protocol.md §3, §10)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace

from duplex_client.framing.plan import (
    SEGMENTS,
    SOUNDTRACK_POLICIES,
    FramerConfig,
    FramingReport,
    PlannedAppend,
    Segment,
    SoundtrackPolicy,
    StreamPosition,
)
from duplex_client.framing.sources import FrameGroup, FrameSampler, PcmSource
from duplex_client.framing.units import ms_to_samples, samples_to_ms
from duplex_client.framing.writer import FramingError, UnitWriter

__all__ = ["Framer", "FramingError"]


@dataclass(slots=True)
class _Clip:
    """A stream's frame source and how far its clip reaches on the media clock."""

    sampler: FrameSampler | None
    origin_ms: int
    length_ms: int | None = None  # None while the clip itself is being framed


def _held(group: FrameGroup) -> FrameGroup:
    return group if group.held else replace(group, held=True)


class Framer:
    """Cuts streams into planned appends, keeping one position across successive streams.

    Each `plan(...)` continues where the previous stream ended (media time, unit numbering,
    cumulative audio and the open unit), so a tail or a second audio file stays on the
    same timelines. The framer never sleeps and never touches the network.
    """

    def __init__(self, config: FramerConfig | None = None, position: StreamPosition | None = None):
        self.config = config or FramerConfig()
        self.report = FramingReport()
        self._load(position or StreamPosition())

    def _load(self, pos: StreamPosition) -> None:
        self._w = UnitWriter(self.config, pos)
        self._had_audio = pos.clip_had_audio
        self._last = pos.last_frames

    @property
    def position(self) -> StreamPosition:
        """Where the planned appends so far have left the timelines."""
        return self._w.position(clip_had_audio=self._had_audio, last_frames=self._last)

    def committed(self, audio_end_samples: int) -> int:
        """The server sealed the turn at `audio_end_samples` (server VAD, protocol.md §3.1).

        The grid re-anchors there, also when the commit is heard after later appends were
        planned; the appends still to come follow. Returns how far the next `unit_index` moved.
        """
        return self._w.reanchor(audio_end_samples, slack=self.config.grid.sample_rate_hz // 1000)

    def relabel(self, append: PlannedAppend) -> PlannedAppend:
        """An append planned before `committed()` moved the grid, labelled for the new grid."""
        return self._w.relabel(append)

    def plan(
        self,
        pcm: PcmSource | None = None,
        frames: FrameSampler | None = None,
        *,
        tail_silence_ms: int = 0,
        soundtrack_policy: SoundtrackPolicy | None = None,
        video_fit: SoundtrackPolicy | None = None,
        segment: Segment = "clip",
    ) -> Iterator[PlannedAppend]:
        """The appends of one stream: the clip (`pcm` and/or `frames`), then the tail silence.

        `soundtrack_policy` applies when `pcm` is a video's soundtrack; None sends it whole
        (external audio). `video_fit` applies when `pcm` is external audio streamed with the
        video `frames`: shorter than the video, `trim` and `pad` add silence up to the
        video's end and the unit boundary after it (every frame is sent; the audio itself is
        never cut), `full` sends it as is (frames end with it). Without `pcm`, `frames` alone
        become VISION units (or fallback units of zero PCM when the session requires audio).
        The report and position are final once the iterator is exhausted.
        """
        if segment not in SEGMENTS or segment == "tail":
            raise ValueError(f"segment must be 'clip' or 'live', got {segment!r}")
        for policy in (soundtrack_policy, video_fit):
            if policy is not None and policy not in SOUNDTRACK_POLICIES:
                raise ValueError(f"soundtrack_policy must be one of {SOUNDTRACK_POLICIES}")
        if tail_silence_ms < 0:
            raise ValueError("tail_silence_ms must not be negative")
        if pcm is not None and not self.config.audio_allowed:
            raise FramingError("the session accepts no audio-bearing units")
        needs_frames = pcm is not None or tail_silence_ms > 0
        if self.config.video_required and frames is None and self._last is None and needs_frames:
            raise FramingError("the session requires video but the stream has no frames")
        fit = video_fit if pcm is not None and frames is not None else None
        return self._run(pcm, frames, tail_silence_ms, soundtrack_policy, segment, fit)

    def _run(
        self,
        pcm: PcmSource | None,
        sampler: FrameSampler | None,
        tail_ms: int,
        policy: SoundtrackPolicy | None,
        segment: Segment,
        fit: SoundtrackPolicy | None = None,
    ) -> Iterator[PlannedAppend]:
        rate = self.config.grid.sample_rate_hz
        origin = self._w.media
        report = FramingReport(
            soundtrack_policy=policy if pcm is not None else None,
            video_fit=fit,
            video_ms=sampler.duration_ms if fit is not None and sampler is not None else 0,
            tail_silence_ms=tail_ms,
            media_origin_ms=samples_to_ms(origin, rate),
        )
        self.report = report
        if pcm is not None and sampler is None and not self.config.video_required:
            self._last = None  # a clip without video must not inherit an earlier clip's frame
        clip = _Clip(sampler, report.media_origin_ms)
        had_audio = self._had_audio if pcm is None and sampler is None else False
        if pcm is not None:
            yield from self._clip_audio(pcm, policy, segment, clip, report)
            had_audio = report.has_audio
        if not had_audio and sampler is not None:
            yield from self._frame_units(sampler.duration_ms, segment, clip)
        report.clip_ms = samples_to_ms(self._w.media - origin, rate)
        clip.length_ms = report.clip_ms
        self._had_audio = had_audio
        if tail_ms > 0:
            if not had_audio and (sampler is not None or self._last is not None):
                yield from self._frame_units(tail_ms, "tail", clip)
            else:
                yield from self._tail_audio(ms_to_samples(tail_ms, rate), clip, report)

    # --- audio ---

    def _unit_left(self) -> int:
        return self._w.unit_left()

    def _clip_audio(
        self,
        pcm: PcmSource,
        policy: SoundtrackPolicy | None,
        segment: Segment,
        clip: _Clip,
        report: FramingReport,
    ) -> Iterator[PlannedAppend]:
        # Whole units are released as soon as they are buffered: at most one unit of
        # look-ahead, which is what `trim` needs to know whether the last unit completes.
        rate = self.config.grid.sample_rate_hz
        buf = bytearray()
        total = 0
        closed_any = False
        for chunk in pcm.chunks():
            buf += chunk
            total += len(chunk)
            need = self._unit_left() * self.config.sample_width
            while len(buf) >= need:
                unit = bytes(buf[:need])
                del buf[:need]
                yield from self._fill(unit, segment, None, clip)
                closed_any = True
                need = self._unit_left() * self.config.sample_width
        rest = bytes(buf[: len(buf) - len(buf) % self.config.sample_width])
        report.original_ms = samples_to_ms(total // self.config.sample_width, rate)
        report.has_audio = total >= self.config.sample_width
        short = ms_to_samples(report.video_ms, rate) - total // self.config.sample_width
        if report.video_fit in ("trim", "pad") and report.has_audio and short > 0:
            yield from self._pad_to_video(rest, short, segment, clip, report)
            return
        if not rest:
            return
        if policy == "trim" and closed_any:
            report.trimmed_ms = samples_to_ms(len(rest) // self.config.sample_width, rate)
        elif policy in ("trim", "pad") or self.config.video_required:
            pad = self._unit_left() * self.config.sample_width - len(rest)
            report.padded_ms = samples_to_ms(pad // self.config.sample_width, rate)
            yield from self._fill(rest + bytes(pad), segment, None, clip, pad_from=len(rest))
        else:
            yield from self._fill(rest, segment, None, clip)

    def _pad_to_video(
        self, rest: bytes, samples: int, segment: Segment, clip: _Clip, report: FramingReport
    ) -> Iterator[PlannedAppend]:
        """`rest`, then `samples` of silence (to the video's end), then silence to the unit
        boundary: external audio shorter than its video, so that every frame is sent."""
        width, rate = self.config.sample_width, self.config.grid.sample_rate_hz
        report.padded_to_video_ms = samples_to_ms(samples, rate)
        left = len(rest) + samples * width
        audible = len(rest)  # bytes of `rest` still to send; silence after them
        while left > 0:
            need = self._unit_left() * width
            take = min(need, left)
            piece = rest[len(rest) - audible :][:take] if audible else b""
            piece += bytes(need - len(piece))
            if take < need:
                report.padded_ms += samples_to_ms((need - take) // width, rate)
            yield from self._fill(piece, segment, None, clip, pad_from=min(audible, need))
            audible = max(0, audible - need)
            left -= take

    def _tail_audio(
        self, samples: int, clip: _Clip, report: FramingReport
    ) -> Iterator[PlannedAppend]:
        left = samples
        if self.config.video_required:
            # Every append must close a unit with frames: round the tail up to a boundary.
            covered, k = self._unit_left(), self._w.audio_unit
            while covered < left:
                k += 1
                covered += self.config.grid.unit_length_samples(k)
            report.padded_ms += samples_to_ms(covered - left, self.config.grid.sample_rate_hz)
            left = covered
        while left > 0:
            n = min(self._unit_left(), left)
            yield from self._fill(bytes(n * self.config.sample_width), "tail", False, clip)
            left -= n

    def _fill(
        self,
        pcm: bytes,
        segment: Segment,
        is_speech: bool | None,
        clip: _Clip,
        *,
        pad_from: int | None = None,
        fallback: bool = False,
    ) -> Iterator[PlannedAppend]:
        """Appends for `pcm`, which fits in the open unit; chunks are phased from the unit start."""

        def pick(start_ms: int, end_ms: int) -> FrameGroup | None:
            return self._pick(start_ms, end_ms, clip)

        for append in self._w.fill(
            pcm, segment, is_speech, pick, pad_from=pad_from, fallback=fallback
        ):
            self.report.appends += 1
            yield append

    # --- frames ---

    def _frame_units(self, span_ms: int, segment: Segment, clip: _Clip) -> Iterator[PlannedAppend]:
        """Frame-only units covering `span_ms` of media: VISION, or fallback zero PCM."""
        rate = self.config.grid.sample_rate_hz
        w = self._w
        end = w.media + ms_to_samples(span_ms, rate)
        while w.media < end:
            if w.unit_open or not self.config.vision_allowed:
                # Zero PCM up to the next boundary stands in for the VISION unit; this also
                # finishes a partly filled audio unit before any VISION unit is sent.
                zeros = bytes(self._unit_left() * self.config.sample_width)
                yield from self._fill(zeros, segment, False, clip, fallback=True)
                continue
            m0, m1 = w.media, w.media + self.config.grid.period_samples
            frames = self._pick(samples_to_ms(m0, rate), samples_to_ms(m1, rate), clip)
            w.media = m1
            if frames is None:
                if self.config.video_required:
                    raise FramingError("the session requires video but a unit has no frame")
                continue
            self.report.appends += 1
            yield w.vision(segment, frames, m0, m1)

    def _pick(self, start_ms: int, end_ms: int, clip: _Clip) -> FrameGroup | None:
        """The unit's frame group: sampled at its start within the clip, else the last one held."""
        rel_start, rel_end = start_ms - clip.origin_ms, end_ms - clip.origin_ms
        within = clip.length_ms is None or rel_start < clip.length_ms
        if clip.sampler is not None and (within or self._last is None):
            group = clip.sampler.group_for_unit(max(0, rel_start), max(0, rel_end))
            if group is not None:
                if group.composite is not None and self.config.max_frames < 2:
                    group = replace(group, composite=None)
                self._last = group
                return group
        return None if self._last is None else _held(self._last)
