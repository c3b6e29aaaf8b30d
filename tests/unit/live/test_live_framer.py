"""The live (push) framer: release on capture, mute cadence, fallback, commits, equivalence."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from duplex_client.framing import (
    BytesPcmSource,
    EncodedImage,
    FrameGroup,
    Framer,
    FramerConfig,
    InputTimeline,
    PlannedAppend,
    SendTiming,
    check_timeline,
)
from duplex_client.framing.live import LiveFramer
from duplex_client.protocol import UnitKind
from tests.unit.framing.fakes import caps, fake_jpeg, speech_pcm

OMNI, AUDIO, VISION = UnitKind.OMNI, UnitKind.AUDIO, UnitKind.VISION


@dataclass
class Feed:
    """A camera: frame n is returned on the n-th `latest()` call."""

    ready_now: bool = True
    calls: int = 0

    def ready(self) -> bool:
        return self.ready_now

    def latest(self) -> FrameGroup | None:
        if not self.ready_now:
            return None
        self.calls += 1
        return FrameGroup(EncodedImage(fake_jpeg(self.calls), self.calls, 64, 48))


def live(profile: str = "minicpmo", **kw: int) -> LiveFramer:
    return LiveFramer(FramerConfig.from_capabilities(caps(profile), **kw))


def push_ms(
    f: LiveFramer, ms: int, *, upload: bool = True, block_ms: int = 20
) -> list[PlannedAppend]:
    out: list[PlannedAppend] = []
    pcm = speech_pcm(ms)
    step = 16 * block_ms * 2
    for i in range(0, len(pcm), step):
        out += f.push(pcm[i : i + step], upload=upload)
    return out


def test_release_on_capture_and_unit_closes() -> None:
    f = live()
    assert push_ms(f, 180) == []  # no chunk is complete yet
    rows = push_ms(f, 20)
    assert [(r.media_start_ms, r.media_end_ms, r.audio_end_ms) for r in rows] == [(0, 200, 200)]
    rows += push_ms(f, 1800)
    assert [r.audio_end_ms for r in rows] == [200 * i for i in range(1, 11)]
    closing = [r for r in rows if r.closes_unit]
    assert [(r.unit_kind, r.unit_index, r.audio_end_ms) for r in closing] == [
        (AUDIO, 0, 1000),
        (AUDIO, 1, 2000),
    ]
    assert all(r.segment == "live" and r.is_speech is None and not r.fallback for r in rows)


def test_frames_ride_the_closing_append_latest_frame() -> None:
    f = live()
    cam = Feed()
    f.set_camera(cam)
    rows = push_ms(f, 3000)
    framed = [r for r in rows if r.frames]
    assert [(r.unit_kind, r.audio_end_ms) for r in framed] == [
        (OMNI, 1000),
        (OMNI, 2000),
        (OMNI, 3000),
    ]
    assert cam.calls == 3  # encoded only when a unit closes


def test_mute_with_camera_tops_up_then_one_vision_unit_per_second() -> None:
    f = live()
    f.set_camera(Feed())
    spoken = push_ms(f, 1300)
    muted = push_ms(f, 3700, upload=False)
    assert spoken[-1].audio_end_ms == 1200
    # the 100 ms captured before muting goes out at once, then zeros close unit 1
    flush, *rest = muted
    assert (flush.audio_end_ms, flush.fallback, flush.is_speech) == (1300, False, None)
    top_up = [r for r in rest if r.duration_ms]
    assert [r.audio_end_ms for r in top_up] == [1400, 1600, 1800, 2000]
    assert all(r.fallback and r.is_speech is False and set(r.pcm) == {0} for r in top_up)
    assert top_up[-1].unit_kind is OMNI and top_up[-1].unit_index == 1
    vision = [r for r in rest if r.unit_kind is VISION]
    assert [(r.media_start_ms, r.media_end_ms, r.unit_index) for r in vision] == [
        (2000, 3000, 2),
        (3000, 4000, 3),
        (4000, 5000, 4),
    ]
    assert all(r.duration_ms == 0 and r.audio_end_ms == 2000 and r.frames for r in vision)
    # unmuting mid-period drops the pending frame-only unit: the frame rides the audio unit
    back = push_ms(f, 1000)
    assert back[0].media_start_ms == 5000 and back[0].audio_end_ms == 2200
    assert back[-1].unit_kind is OMNI and back[-1].unit_index == 5
    assert back[-1].media_end_ms == 6000


def test_mute_when_audio_is_required_sends_zero_units_with_frames() -> None:
    f = live("audio_required")
    f.set_camera(Feed())
    rows = push_ms(f, 2000, upload=False)
    assert [r.audio_end_ms for r in rows] == [200 * i for i in range(1, 11)]
    assert all(r.fallback and r.is_speech is False for r in rows)
    assert [(r.unit_kind, r.audio_end_ms) for r in rows if r.frames] == [(OMNI, 1000), (OMNI, 2000)]


def test_mute_without_camera_sends_nothing_and_media_keeps_running() -> None:
    f = live()
    push_ms(f, 1000)
    assert push_ms(f, 2500, upload=False) == []
    rows = push_ms(f, 200)
    assert (rows[0].media_start_ms, rows[0].audio_end_ms) == (3500, 1200)


def test_camera_off_drops_unreleased_stand_ins() -> None:
    f = live("audio_required")
    cam = Feed()
    f.set_camera(cam)
    assert [r.audio_end_ms for r in push_ms(f, 300, upload=False)] == [200]
    f.set_camera(None)
    assert push_ms(f, 1000, upload=False) == []
    rows = push_ms(f, 200)
    assert rows[0].media_start_ms == 1300 and rows[0].audio_start_samples == 3200


def test_commit_flushes_and_reanchors_the_grid() -> None:
    f = live()
    f.set_camera(Feed())
    rows = push_ms(f, 1500)
    tail = f.commit()
    assert [(r.audio_end_ms, r.closes_unit) for r in tail] == [(1500, False)]
    assert f.committed() == 1
    assert f.position.unit_index == 2 and f.position.unit_start_samples == 24000
    vision = [r for r in push_ms(f, 1000, upload=False) if r.unit_kind is VISION]
    assert [(r.unit_index, r.media_start_ms) for r in vision] == [(2, 1500)]
    assert f.committed(24000 + 8) == 0  # the server's rounded echo is a no-op
    assert rows[-1].audio_end_ms == 1400


def test_server_commit_inside_a_unit_reanchors_late() -> None:
    f = live()
    push_ms(f, 1400)
    # the server sealed the turn at 1200 ms; 200 ms more were sent since
    assert f.committed(19200) == 1
    rows = push_ms(f, 1000)
    assert [(r.unit_index, r.audio_end_ms) for r in rows if r.closes_unit] == [(2, 2200)]


def test_video_required_waits_for_a_frame_and_sends_whole_units() -> None:
    f = live("video_required")
    cam = Feed(ready_now=False)
    f.set_camera(cam)
    assert push_ms(f, 500) == []
    cam.ready_now = True
    rows = push_ms(f, 2000)
    assert [(r.unit_kind, r.duration_ms, r.media_start_ms) for r in rows] == [
        (OMNI, 1000, 500),
        (OMNI, 1000, 1500),
    ]


def test_timeline_invariants_hold_across_modes() -> None:
    f = live()
    f.set_camera(Feed())
    rows = push_ms(f, 1300) + push_ms(f, 2500, upload=False) + push_ms(f, 900)
    rows += f.commit()
    tl = InputTimeline()
    for i, r in enumerate(rows):
        tl.add_append(r, f"evt_{i}", SendTiming(r.media_end_ms, r.media_end_ms + 0.5, 0.5))
    f.committed()
    tl.add_commit("evt_c", SendTiming(None, 5000.0, None))
    rows2 = push_ms(f, 2000, upload=False)
    for i, r in enumerate(rows2):
        tl.add_append(r, f"evt_b{i}", SendTiming(r.media_end_ms, r.media_end_ms, 0.0))
    assert check_timeline(tl.to_dict()) == []


@settings(max_examples=60, deadline=None)
@given(
    blocks=st.lists(st.integers(1, 900), min_size=1, max_size=40),
    chunk_ms=st.sampled_from([100, 200, 250, 1000]),
)
def test_continuous_capture_cuts_like_the_file_framer(blocks: list[int], chunk_ms: int) -> None:
    total = sum(blocks)
    pcm = speech_pcm(0, extra_samples=total)
    config = FramerConfig.from_capabilities(caps(), chunk_ms=chunk_ms)
    f = LiveFramer(config)
    got: list[PlannedAppend] = []
    at = 0
    for n in blocks:
        got += f.push(pcm[at * 2 : (at + n) * 2], upload=True)
        at += n
    got += f.flush()
    want = list(Framer(config).plan(BytesPcmSource(pcm), segment="live"))
    key = [(r.pcm, r.audio_end_samples, r.unit_index, r.media_start_ms) for r in got]
    assert key == [(r.pcm, r.audio_end_samples, r.unit_index, r.media_start_ms) for r in want]
