"""The framer: worked examples of protocol.md §13 and every unit-kind / policy branch."""

from __future__ import annotations

import pytest

from duplex_client.framing import (
    BytesPcmSource,
    EncodedImage,
    FrameGroup,
    Framer,
    FramerConfig,
    FramingError,
    PlannedAppend,
    StreamPosition,
    UnitGrid,
)
from duplex_client.protocol import Capabilities, UnitKind
from tests.unit.framing.fakes import FakeSampler, caps, speech_pcm

OMNI, AUDIO, VISION = UnitKind.OMNI, UnitKind.AUDIO, UnitKind.VISION


def framer(capabilities: Capabilities | None = None, **kw: object) -> Framer:
    return Framer(FramerConfig.from_capabilities(capabilities or caps(), **kw))  # type: ignore[arg-type]


def soundtrack(ms: int, **kw: int) -> BytesPcmSource:
    return BytesPcmSource(speech_pcm(ms, **kw), kind="video_soundtrack")


def pts(a: PlannedAppend) -> object:
    assert a.frames is not None
    return a.frames.base.pts_ms


def test_example_a_wav_plus_tail() -> None:
    f = framer()
    rows = list(f.plan(BytesPcmSource(speech_pcm(1400)), FakeSampler(3000), tail_silence_ms=1000))
    assert len(rows) == 12
    assert [r.segment for r in rows] == ["clip"] * 7 + ["tail"] * 5
    assert [r.media_start_ms for r in rows] == [200 * i for i in range(12)]
    assert [r.audio_end_ms for r in rows] == [200 * (i + 1) for i in range(12)]
    framed = [r for r in rows if r.frames]
    assert [r.audio_end_ms for r in framed] == [1000, 2000]
    assert [pts(r) for r in framed] == [0, 1000]
    assert [(r.unit_kind, r.unit_index) for r in framed] == [(OMNI, 0), (OMNI, 1)]
    assert all(r.unit_kind is None and r.unit_index is None for r in rows if not r.frames)
    assert all(r.is_speech is None for r in rows[:7])
    assert all(r.is_speech is False for r in rows[7:])
    assert all(set(r.pcm) == {0} for r in rows[7:])
    assert f.position.media_ms == 2400 and f.position.unit_index == 2
    assert f.position.unit_open  # 400 ms residual of unit 2, closed by the commit


def test_example_b_soundtrack_trim_plus_tail() -> None:
    f = framer()
    rows = list(
        f.plan(soundtrack(3500), FakeSampler(3500), tail_silence_ms=1000, soundtrack_policy="trim")
    )
    assert [r.segment for r in rows] == ["clip"] * 15 + ["tail"] * 5
    assert rows[-1].audio_end_ms == 4000
    framed = [r for r in rows if r.frames]
    assert [r.audio_end_ms for r in framed] == [1000, 2000, 3000, 4000]
    assert [pts(r) for r in framed] == [0, 1000, 2000, 2000]
    assert [r.frames.held for r in framed if r.frames] == [False, False, False, True]
    assert f.report.soundtrack_record() == {
        "policy": "trim", "original_ms": 3500, "trimmed_ms": 500, "padded_ms": 0,
    }  # fmt: skip
    assert not f.position.unit_open  # no residual


def test_example_c_clip_without_audio_is_vision_units() -> None:
    f = framer()
    rows = list(f.plan(None, FakeSampler(3000), tail_silence_ms=1000))
    assert [r.unit_kind for r in rows] == [VISION] * 4
    assert [r.segment for r in rows] == ["clip"] * 3 + ["tail"]
    assert [(r.media_start_ms, r.media_end_ms) for r in rows] == [
        (0, 1000), (1000, 2000), (2000, 3000), (3000, 4000),
    ]  # fmt: skip
    assert [pts(r) for r in rows] == [0, 1000, 2000, 2000]
    assert [r.unit_index for r in rows] == [0, 1, 2, 3]
    assert all(r.pcm == b"" and r.duration_ms == 0 and r.audio_end_ms == 0 for r in rows)
    assert all(r.is_speech is False and not r.fallback for r in rows)
    assert rows[-1].frames is not None and rows[-1].frames.held


def test_example_c_with_audio_required_uses_fallback_units() -> None:
    rows = list(framer(caps("audio_required")).plan(None, FakeSampler(3000), tail_silence_ms=1000))
    assert len(rows) == 20
    assert all(r.fallback and r.is_speech is False and set(r.pcm) == {0} for r in rows)
    framed = [r for r in rows if r.frames]
    assert [r.audio_end_ms for r in framed] == [1000, 2000, 3000, 4000]
    assert [pts(r) for r in framed] == [0, 1000, 2000, 2000]
    assert [r.unit_kind for r in framed] == [OMNI] * 4
    assert [r.segment for r in rows] == ["clip"] * 15 + ["tail"] * 5


def test_pad_policy_zero_pads_to_the_boundary() -> None:
    f = framer()
    rows = list(f.plan(soundtrack(3500), FakeSampler(3500), soundtrack_policy="pad"))
    assert rows[-1].audio_end_ms == 4000 and rows[-1].unit_kind == OMNI
    assert pts(rows[-1]) == 3000  # the padded unit starts inside the clip
    assert f.report.soundtrack_record() == {
        "policy": "pad", "original_ms": 3500, "trimmed_ms": 0, "padded_ms": 500,
    }  # fmt: skip
    # The append straddling the end of the soundtrack keeps the speech hint unset.
    assert [(r.media_start_ms, r.is_speech) for r in rows[-3:]] == [
        (3400, None), (3600, False), (3800, False),
    ]  # fmt: skip


def test_full_policy_sends_the_soundtrack_as_is() -> None:
    f = framer()
    rows = list(f.plan(soundtrack(3500), FakeSampler(3500), soundtrack_policy="full"))
    assert rows[-1].audio_end_ms == 3500 and rows[-1].unit_kind is None
    assert f.report.soundtrack_record() == {
        "policy": "full", "original_ms": 3500, "trimmed_ms": 0, "padded_ms": 0,
    }  # fmt: skip


def test_trim_pads_a_soundtrack_shorter_than_the_first_unit() -> None:
    f = framer()
    rows = list(f.plan(soundtrack(600), FakeSampler(600), soundtrack_policy="trim"))
    assert rows[-1].audio_end_ms == 1000 and rows[-1].unit_kind == OMNI
    assert f.report.trimmed_ms == 0 and f.report.padded_ms == 400


def test_external_audio_is_sent_whole_and_records_no_policy() -> None:
    f = framer()
    rows = list(f.plan(BytesPcmSource(speech_pcm(3500)), FakeSampler(3500)))
    assert rows[-1].audio_end_ms == 3500
    assert f.report.soundtrack_record() is None


def test_audio_only_units_are_audio_kind() -> None:
    rows = list(framer().plan(BytesPcmSource(speech_pcm(2000))))
    assert [(r.unit_kind, r.unit_index) for r in rows if r.closes_unit] == [(AUDIO, 0), (AUDIO, 1)]
    assert all(r.frames is None for r in rows)


def test_first_unit_of_1030_ms_gets_a_short_closing_append() -> None:
    rows = list(framer(caps(first=1030)).plan(BytesPcmSource(speech_pcm(2030)), FakeSampler(3000)))
    assert [r.duration_ms for r in rows] == [200] * 5 + [30] + [200] * 5
    assert [r.audio_end_ms for r in rows if r.frames] == [1030, 2030]


def test_chunks_never_straddle_a_boundary() -> None:
    rows = list(framer(chunk_ms=300).plan(BytesPcmSource(speech_pcm(2000)), FakeSampler(2000)))
    assert [r.duration_ms for r in rows] == [300, 300, 300, 100] * 2
    assert [r.audio_end_ms for r in rows if r.frames] == [1000, 2000]


def test_chunk_longer_than_a_unit_is_cut_at_each_boundary() -> None:
    rows = list(framer(chunk_ms=2500).plan(BytesPcmSource(speech_pcm(3200))))
    assert [r.audio_end_ms for r in rows] == [1000, 2000, 3000, 3200]


def test_odd_source_chunks_are_reassembled_exactly() -> None:
    pcm = speech_pcm(1700, extra_samples=3)
    rows = list(framer().plan(BytesPcmSource(pcm, chunk_bytes=998)))
    assert b"".join(r.pcm for r in rows) == pcm
    assert rows[-1].audio_end_samples == len(pcm) // 2


def test_composite_rides_with_base_and_is_dropped_when_one_frame_is_allowed() -> None:
    two = list(framer().plan(BytesPcmSource(speech_pcm(1000)), FakeSampler(2000, fps=4, stack=2)))
    assert two[-1].frames is not None and two[-1].frames.composite is not None
    assert two[-1].frames.composite.pts_ms == (500,)
    one = list(
        framer(caps(max_frames=1)).plan(
            BytesPcmSource(speech_pcm(1000)), FakeSampler(2000, stack=2)
        )
    )
    assert one[-1].frames is not None and one[-1].frames.composite is None


def test_video_required_sends_one_append_per_unit_with_frames() -> None:
    f = framer(caps("video_required"))
    rows = list(f.plan(BytesPcmSource(speech_pcm(2500)), FakeSampler(3000), tail_silence_ms=500))
    assert [(r.duration_ms, r.unit_kind) for r in rows] == [(1000, OMNI)] * 4
    assert [r.segment for r in rows] == ["clip", "clip", "clip", "tail"]
    # The partial last unit is zero-padded to carry its frame, and so is the tail.
    assert f.report.padded_ms == 1000
    tail = list(framer(caps("video_required")).plan(None, FakeSampler(2000), tail_silence_ms=1000))
    assert [r.unit_kind for r in tail] == [VISION] * 3


def test_video_required_tail_is_rounded_up_to_a_boundary() -> None:
    f = framer(caps("video_required"))
    rows = list(f.plan(BytesPcmSource(speech_pcm(1000)), FakeSampler(1000), tail_silence_ms=300))
    assert [(r.segment, r.duration_ms, r.unit_kind) for r in rows] == [
        ("clip", 1000, OMNI), ("tail", 1000, OMNI),
    ]  # fmt: skip
    assert f.report.padded_ms == 700


def test_video_required_without_frames_is_refused() -> None:
    with pytest.raises(FramingError):
        framer(caps("video_required")).plan(BytesPcmSource(speech_pcm(1000)))


def test_vision_after_a_partly_filled_unit_fills_it_with_fallback_silence() -> None:
    f = framer()
    first = list(f.plan(BytesPcmSource(speech_pcm(1400))))
    assert f.position.unit_open
    sampler = FakeSampler(2000)
    rows = list(f.plan(None, sampler))
    assert [(r.duration_ms, r.fallback, r.unit_kind) for r in rows] == [
        (200, True, None), (200, True, None), (200, True, OMNI),
        (0, False, VISION), (0, False, VISION),
    ]  # fmt: skip
    assert [r.unit_index for r in first + rows if r.closes_unit] == [0, 1, 2, 3]
    assert [(r.media_start_ms, r.media_end_ms) for r in rows if r.unit_kind == VISION] == [
        (2000, 3000), (3000, 4000),
    ]  # fmt: skip
    assert sampler.calls == [(0, 600), (600, 1600), (1600, 2600)]


def test_second_stream_continues_media_time_and_unit_numbering() -> None:
    f = framer()
    list(f.plan(BytesPcmSource(speech_pcm(2000)), FakeSampler(2000)))
    rows = list(f.plan(BytesPcmSource(speech_pcm(1000))))
    assert rows[0].media_start_ms == 2000 and rows[0].audio_end_ms == 2200
    assert [(r.unit_index, r.unit_kind) for r in rows if r.closes_unit] == [(2, AUDIO)]  # no video


def test_a_separate_tail_stream_holds_the_last_frame() -> None:
    f = framer()
    list(f.plan(soundtrack(3000), FakeSampler(3000), soundtrack_policy="trim"))
    rows = list(f.plan(tail_silence_ms=1000))
    assert [r.segment for r in rows] == ["tail"] * 5
    assert rows[-1].unit_index == 3 and rows[-1].frames is not None
    assert rows[-1].frames.held and rows[-1].frames.base.pts_ms == 2000
    vision = framer()
    list(vision.plan(None, FakeSampler(2000)))
    assert [r.unit_kind for r in vision.plan(tail_silence_ms=2000)] == [VISION, VISION]


def test_a_tail_without_any_video_is_plain_silence() -> None:
    rows = list(framer().plan(tail_silence_ms=1000))
    assert len(rows) == 5 and rows[-1].unit_kind == AUDIO and rows[-1].is_speech is False


def test_continuation_from_an_explicit_position() -> None:
    grid = UnitGrid()
    start = StreamPosition.after_audio(1400, grid, media_ms=5000).moved(unit_index=7)
    assert (
        start.unit_index == 7 and start.audio_unit_index == 1 and start.unit_start_samples == 16000
    )
    f = Framer(FramerConfig(grid), start)
    rows = list(f.plan(BytesPcmSource(speech_pcm(800))))
    assert rows[0].media_start_ms == 5000 and rows[0].audio_end_ms == 1600
    assert [(r.audio_end_ms, r.unit_index) for r in rows if r.closes_unit] == [(2000, 7)]


def test_after_commit_reanchors_the_grid_inside_a_unit_only() -> None:
    grid = UnitGrid()
    pos = StreamPosition.after_audio(2400, grid)
    sealed = pos.after_commit()
    assert sealed.unit_start_samples == pos.audio_samples
    assert sealed.unit_index == pos.unit_index + 1 and sealed.audio_unit_index == 3
    rows = list(Framer(FramerConfig(grid), sealed).plan(BytesPcmSource(speech_pcm(1000))))
    assert [(r.audio_end_ms, r.unit_index) for r in rows if r.closes_unit] == [(3400, 3)]
    on_boundary = StreamPosition.after_audio(2000, grid)
    assert on_boundary.after_commit() == on_boundary


def test_sampler_is_asked_for_unit_spans_in_order_within_the_clip() -> None:
    sampler = FakeSampler(3000)
    list(framer().plan(BytesPcmSource(speech_pcm(1400)), sampler, tail_silence_ms=3000))
    assert sampler.calls == [(0, 1000), (1000, 2000)]  # later tail units hold the last frame


def test_source_relative_times_for_a_clip_starting_later_on_the_media_clock() -> None:
    f = Framer(FramerConfig(), StreamPosition(media_ms=7000))
    sampler = FakeSampler(2000)
    rows = list(f.plan(None, sampler))
    assert sampler.calls == [(0, 1000), (1000, 2000)]
    assert [r.media_start_ms for r in rows] == [7000, 8000]


def test_a_clip_without_video_does_not_inherit_an_earlier_frame() -> None:
    f = framer()
    list(f.plan(BytesPcmSource(speech_pcm(1000)), FakeSampler(1000)))
    rows = list(f.plan(BytesPcmSource(speech_pcm(1000)), tail_silence_ms=1000))
    assert all(r.frames is None for r in rows)


def test_a_sampler_without_frames_gives_no_vision_units() -> None:
    class Empty(FakeSampler):
        def group_for_unit(self, start_ms: int, end_ms: int) -> FrameGroup | None:
            return None

    assert list(framer().plan(None, Empty(3000))) == []


def test_an_empty_pcm_source_with_frames_is_vision() -> None:
    rows = list(framer().plan(BytesPcmSource(b""), FakeSampler(2000)))
    assert [r.unit_kind for r in rows] == [VISION, VISION]


def test_held_frame_keeps_its_bytes() -> None:
    image = EncodedImage(b"\xff\xd8\xffX", 0)
    f = Framer(FramerConfig(), StreamPosition(last_frames=FrameGroup(image), clip_had_audio=False))
    rows = list(f.plan(tail_silence_ms=1000))
    assert rows[0].unit_kind == VISION and rows[0].video_frames == (b"\xff\xd8\xffX",)


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"segment": "tail"}, ValueError),
        ({"soundtrack_policy": "cut"}, ValueError),
        ({"tail_silence_ms": -1}, ValueError),
    ],
)
def test_rejects_bad_arguments(kwargs: dict[str, object], error: type[Exception]) -> None:
    with pytest.raises(error):
        framer().plan(BytesPcmSource(b""), **kwargs)  # type: ignore[arg-type]


def test_config_validation() -> None:
    with pytest.raises(ValueError):
        FramerConfig(chunk_ms=0)
    with pytest.raises(ValueError):
        FramerConfig(max_frames=0)
    cfg = FramerConfig.from_capabilities(caps("audio_required"), chunk_ms=100)
    assert not cfg.vision_allowed and not cfg.video_required and cfg.chunk_samples == 1600


def test_audio_outlasting_the_video_holds_its_last_frame() -> None:
    sampler = FakeSampler(1000)
    rows = list(framer().plan(BytesPcmSource(speech_pcm(3000)), sampler))
    framed = [r.frames for r in rows if r.frames]
    assert [(g.base.pts_ms, g.held) for g in framed] == [(0, False), (0, True), (0, True)]


def test_a_still_image_is_held_on_every_unit() -> None:
    image = EncodedImage(b"\xff\xd8\xffI", 0)

    class Still(FakeSampler):
        def group_for_unit(self, start_ms: int, end_ms: int) -> FrameGroup | None:
            return FrameGroup(image, held=True)

    with_audio = list(framer().plan(BytesPcmSource(speech_pcm(2000)), Still(0)))
    assert [r.unit_kind for r in with_audio if r.closes_unit] == [OMNI, OMNI]
    alone = list(framer().plan(None, Still(0), tail_silence_ms=2000))
    assert [(r.segment, r.unit_kind) for r in alone] == [("tail", VISION), ("tail", VISION)]


def test_kinds_list_without_audio_units_means_every_unit_carries_frames() -> None:
    only_omni = Capabilities.from_dict(
        {"input_unit_kinds": ["OMNI"], "required_input_modalities": ["audio"]}
    )
    cfg = FramerConfig.from_capabilities(only_omni)
    assert cfg.video_required and not cfg.vision_allowed and cfg.audio_allowed
    vision_only = FramerConfig.from_capabilities(
        Capabilities.from_dict({"input_unit_kinds": ["VISION"]})
    )
    with pytest.raises(FramingError, match="no audio"):
        Framer(vision_only).plan(BytesPcmSource(speech_pcm(1000)), FakeSampler(1000))
