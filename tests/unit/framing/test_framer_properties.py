"""Property tests: framing invariants over random clips, chunks, frame rates and grids."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from duplex_client.client.streaming import stream
from duplex_client.framing import (
    BytesPcmSource,
    Framer,
    FramerConfig,
    InputTimeline,
    MediaInput,
    PlannedAppend,
    SoundtrackPolicy,
    UnitGrid,
    check_timeline,
)
from duplex_client.protocol import Capabilities, UnitKind
from tests.unit.framing.fakes import (
    PROFILES,
    FakeClock,
    FakeSampler,
    FakeTarget,
    caps,
    speech_pcm,
)

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@dataclass
class Case:
    """One random stream."""

    capabilities: Capabilities
    profile: str
    chunk_ms: int
    audio_ms: int | None
    extra_samples: int
    source_chunk: int
    video_ms: int | None
    fps: float
    stack: int
    tail_ms: int
    policy: SoundtrackPolicy | None

    @property
    def pcm(self) -> bytes | None:
        if self.audio_ms is None:
            return None
        return speech_pcm(self.audio_ms, extra_samples=self.extra_samples)

    def source(self) -> tuple[BytesPcmSource | None, FakeSampler | None]:
        pcm = self.pcm
        kind = "video_soundtrack" if self.policy else "wav"
        audio = (
            None if pcm is None else BytesPcmSource(pcm, kind=kind, chunk_bytes=self.source_chunk)
        )
        video = None if self.video_ms is None else FakeSampler(self.video_ms, self.fps, self.stack)
        return audio, video


@st.composite
def cases(draw: st.DrawFn) -> Case:
    profile = draw(st.sampled_from(sorted(PROFILES)))
    first = draw(st.integers(100, 1500))
    period = draw(st.integers(100, 1500))
    capabilities = caps(profile, first=first, period=period)
    audio_ms = draw(st.one_of(st.none(), st.integers(0, 4000)))
    video_ms = draw(st.one_of(st.none(), st.integers(1, 4000)))
    if profile == "video_required" and video_ms is None:
        video_ms = draw(st.integers(1, 4000))
    return Case(
        capabilities=capabilities,
        profile=profile,
        chunk_ms=draw(st.integers(10, 1200)),
        audio_ms=audio_ms,
        extra_samples=draw(st.integers(0, 15)),
        source_chunk=2 * draw(st.integers(1, 12000)),
        video_ms=video_ms,
        fps=draw(st.sampled_from([0.5, 1.0, 2.0, 7.5, 30.0])),
        stack=draw(st.sampled_from([1, 1, 2, 3])),
        tail_ms=draw(st.sampled_from([0, 0, 200, 1000, 1700, 2500])),
        policy=draw(st.sampled_from([None, "trim", "pad", "full"])),
    )


def plan(case: Case, framer: Framer | None = None) -> tuple[Framer, list[PlannedAppend]]:
    framer = framer or Framer(
        FramerConfig.from_capabilities(case.capabilities, chunk_ms=case.chunk_ms)
    )
    pcm, video = case.source()
    rows = list(
        framer.plan(pcm, video, tail_silence_ms=case.tail_ms, soundtrack_policy=case.policy)
    )
    return framer, rows


def expected_clip_pcm(case: Case, grid: UnitGrid, video_required: bool) -> bytes:
    pcm = case.pcm or b""
    n = len(pcm) // 2
    if n == 0:
        return b""
    k = grid.unit_at_sample(n)
    on_boundary = n == grid.start_samples(k)
    if on_boundary:
        return pcm
    if case.policy == "trim" and k > 0:
        return pcm[: grid.start_samples(k) * 2]
    if case.policy in ("trim", "pad") or video_required:
        return pcm + bytes((grid.boundary_samples(k) - n) * 2)
    return pcm


def check_rows(case: Case, framer: Framer, rows: list[PlannedAppend]) -> None:
    cfg = framer.config
    grid = cfg.grid
    prev_end = 0
    last_unit = -1
    for row in rows:
        # Audio is contiguous and strictly increasing on audio appends; VISION leaves it alone.
        assert row.audio_start_samples == prev_end
        if row.unit_kind == UnitKind.VISION:
            assert row.pcm == b"" and row.duration_ms == 0 and row.frames is not None
        else:
            assert row.audio_end_samples > row.audio_start_samples
            assert row.samples == row.audio_end_samples - row.audio_start_samples
        prev_end = row.audio_end_samples
        # An append never crosses a boundary, and closes a unit exactly when it ends on one.
        closed = list(grid.closes_all(row.audio_start_samples, row.audio_end_samples))
        assert len(closed) <= 1
        if row.unit_kind in (UnitKind.AUDIO, UnitKind.OMNI):
            assert closed and grid.boundary_samples(closed[0]) == row.audio_end_samples
        elif row.unit_kind is None:
            assert not closed
        # Frames ride only unit-closing appends (or are a VISION unit); one group per unit.
        if row.frames is not None:
            assert row.unit_kind in (UnitKind.OMNI, UnitKind.VISION)
            assert len(row.frames.images) <= cfg.max_frames
        if row.unit_kind is not None:
            assert row.unit_index == last_unit + 1
            last_unit = row.unit_index
        else:
            assert row.unit_index is None
        if not cfg.video_required and row.unit_kind != UnitKind.VISION:
            assert row.samples <= cfg.chunk_samples
        if cfg.video_required:
            assert row.frames is not None
        if row.segment == "tail" or row.fallback:
            assert row.is_speech is False and set(row.pcm) <= {0}
        if row.fallback:
            assert not cfg.vision_allowed or row.segment in ("clip", "tail")
    media = [(r.media_start_ms, r.media_end_ms) for r in rows]
    assert all(a <= b for a, b in media)
    assert all(media[i][1] <= media[i + 1][0] for i in range(len(media) - 1))
    # No audio sample is lost or duplicated.
    clip_pcm = b"".join(r.pcm for r in rows if r.segment == "clip" and not r.fallback)
    has_audio = bool(case.pcm)
    if has_audio:
        assert clip_pcm == expected_clip_pcm(case, grid, cfg.video_required)
    tail = [r for r in rows if r.segment == "tail"]
    if case.tail_ms and (has_audio or case.video_ms is None):
        tail_samples = sum(r.samples for r in tail)
        assert tail_samples >= case.tail_ms * 16
        if not cfg.video_required:
            assert tail_samples == case.tail_ms * 16
    if not has_audio and case.video_ms is not None:
        # Frame-only clip: VISION units, or fallback units when audio is required.
        kinds = {r.unit_kind for r in rows if r.closes_unit}
        assert kinds <= ({UnitKind.VISION} if cfg.vision_allowed else {UnitKind.OMNI})
        assert all(r.fallback for r in rows if r.pcm)


@SETTINGS
@given(case=cases())
def test_framer_invariants(case: Case) -> None:
    framer, rows = plan(case)
    check_rows(case, framer, rows)
    assert framer.report.appends == len(rows)
    end = framer.position
    assert end.audio_samples == (rows[-1].audio_end_samples if rows else 0)
    assert end.unit_index == sum(1 for r in rows if r.closes_unit)


@SETTINGS
@given(first=cases(), second=cases())
def test_unit_numbering_and_media_continue_across_streams(first: Case, second: Case) -> None:
    second.capabilities = first.capabilities
    second.profile = first.profile
    if first.profile == "video_required":
        second.video_ms = second.video_ms or 1000
    framer, rows1 = plan(first)
    end1 = framer.position
    _, rows2 = plan(second, framer)
    closing = [r.unit_index for r in rows1 + rows2 if r.closes_unit]
    assert closing == list(range(len(closing)))
    if rows2:
        assert rows2[0].media_start_ms >= end1.media_ms
        assert rows2[0].audio_start_samples == end1.audio_samples


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases(), realtime=st.booleans(), cost_ms=st.sampled_from([0, 3, 250]))
def test_timeline_rows_equal_what_was_sent(case: Case, realtime: bool, cost_ms: int) -> None:
    fake = FakeClock()
    target = FakeTarget(fake, capabilities=case.capabilities, cost_s=cost_ms / 1000)
    timeline = InputTimeline()
    pcm, video = case.source()
    result = asyncio.run(
        stream(
            target,
            MediaInput(pcm, video),
            tail_silence_s=case.tail_ms / 1000,
            chunk_ms=case.chunk_ms,
            soundtrack_policy=case.policy or "trim",
            realtime=realtime,
            timeline=timeline,
            now=fake.now,
            sleep=fake.sleep,
        )
    )
    doc = timeline.to_dict()
    assert check_timeline(doc) == []
    appends = target.appends
    assert len(doc["appends"]) == len(appends) == result.appends
    audio_samples = 0
    for row, sent in zip(doc["appends"], appends, strict=True):
        audio_samples += len(sent.pcm) // 2
        assert row["event_id"] == sent.event_id
        assert row["sent_offset_ms"] == round((sent.at - result.clock.t0) * 1000, 3)
        assert row["duration_ms"] == round(len(sent.pcm) / 32)
        assert row["audio_end_ms"] == round(audio_samples / 16)
        assert row["is_speech"] == sent.fields["is_speech"]
        assert row["unit_index"] == sent.fields["unit_index"]
        assert row["media_start_ms"] == sent.fields["media_start_ms"]
        assert row["media_end_ms"] == sent.fields["media_end_ms"]
        assert len(row["frames"]) == len(sent.frames)
        if row["unit_kind"] == "VISION":
            assert sent.pcm == b""
        if realtime:
            assert row["scheduled_offset_ms"] == row["media_end_ms"]  # released when captured
            assert row["sent_offset_ms"] >= row["scheduled_offset_ms"] - 1e-3
        else:
            assert row["scheduled_offset_ms"] is None and row["lateness_ms"] is None
    assert doc["totals"]["audio_ms"] == round(audio_samples / 16)
    commits = [s for s in target.sent if s.kind == "commit"]
    assert len(doc["commits"]) == len(commits) == (1 if appends else 0)
    # The commit seals a partly filled last unit, which takes the next unit index.
    closing = sum(1 for r in doc["appends"] if r["unit_kind"])
    residual = bool(appends) and doc["appends"][-1]["unit_kind"] is None
    assert result.position.unit_index == closing + residual
    assert not result.position.unit_open
