"""`stream()`: appends released on one media clock (fake time), commits, timeline, continuation."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from duplex_client.client.streaming import StreamResult, stream
from duplex_client.framing import (
    BytesPcmSource,
    Framer,
    FramerConfig,
    InputTimeline,
    MediaClock,
    MediaInput,
    StreamPosition,
    check_timeline,
)
from duplex_client.protocol import InputAudioBufferCommitted, ServerEvent
from tests.unit.framing.fakes import (
    FakeClock,
    FakeSampler,
    FakeTarget,
    caps,
    speech_pcm,
)


def offsets(target: FakeTarget, t0: float, kind: str = "append") -> list[float]:
    return [round((s.at - t0) * 1000, 6) for s in target.sent if s.kind == kind]


async def run(target: FakeTarget, source: object = None, **kw: object) -> StreamResult:
    kw.setdefault("now", target.clock.now)
    kw.setdefault("sleep", target.clock.sleep)
    return await stream(target, source, **kw)  # type: ignore[arg-type]


# --- acceptance: the worked examples end to end ---


async def test_wav_with_tail_sends_12_appends_with_frames_on_unit_closes() -> None:
    """Worked example (a): the video is no longer than the WAV, so nothing is fitted."""
    target = FakeTarget()
    timeline = InputTimeline()
    source = MediaInput(BytesPcmSource(speech_pcm(1400), kind="wav"), FakeSampler(1400))
    result = await run(target, source, tail_silence_s=1.0, timeline=timeline)
    appends = target.appends
    assert len(appends) == 12 == result.appends
    doc = timeline.to_dict()
    rows = doc["appends"]
    assert [r["audio_end_ms"] for r in rows if r["frames"]] == [1000, 2000]
    assert [len(a.frames) for a in appends] == [0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0]
    assert [a.fields["is_speech"] for a in appends[7:]] == [False] * 5
    assert [r["segment"] for r in rows] == ["clip"] * 7 + ["tail"] * 5
    # each append is released when its audio has been "captured": at its media end
    assert offsets(target, result.clock.t0) == [200.0 * (i + 1) for i in range(12)]
    assert offsets(target, result.clock.t0, "commit") == [2400.0]
    assert doc["commits"][0]["after_append_index"] == 11
    assert doc["commits"][0]["scheduled_offset_ms"] == 2400.0
    assert doc["tail_silence_ms"] == 1000 and doc["soundtrack_policy"] is None
    assert check_timeline(doc) == []


@pytest.mark.parametrize("policy", ["trim", "pad"])
async def test_a_wav_shorter_than_its_video_is_padded_to_it(policy: str) -> None:
    """1.4 s WAV, 2.5 s video: silence to 2500 ms, then to the unit boundary (issue 32)."""
    target = FakeTarget()
    timeline = InputTimeline()
    source = MediaInput(BytesPcmSource(speech_pcm(1400), kind="wav"), FakeSampler(2500))
    await run(target, source, tail_silence_s=1.0, timeline=timeline, soundtrack_policy=policy)
    doc = timeline.to_dict()
    rows = doc["appends"]
    assert [r["segment"] for r in rows] == ["clip"] * 15 + ["tail"] * 5
    assert [(r["audio_end_ms"], r["frames"][0]["source_pts_ms"]) for r in rows if r["frames"]] == [
        (1000, 0), (2000, 1000), (3000, 2000), (4000, 2000),
    ]  # fmt: skip
    assert doc["audio_source"]["fitted_to_video"] == {
        "policy": policy, "audio_ms": 1400, "video_ms": 2500, "padded_ms": 1600,
    }  # fmt: skip
    assert b"".join(a.pcm for a in target.appends)[: 1400 * 32] == speech_pcm(1400)
    assert [a.fields["is_speech"] for a in target.appends[7:]] == [False] * 13
    assert doc["soundtrack_policy"] is None and check_timeline(doc) == []


async def test_a_wav_shorter_than_its_video_with_full_is_sent_as_is() -> None:
    target = FakeTarget()
    timeline = InputTimeline()
    source = MediaInput(BytesPcmSource(speech_pcm(1400), kind="wav"), FakeSampler(3000))
    await run(target, source, timeline=timeline, soundtrack_policy="full")
    doc = timeline.to_dict()
    assert doc["appends"][-1]["media_end_ms"] == 1400
    assert doc["audio_source"]["fitted_to_video"] == {
        "policy": "full", "audio_ms": 1400, "video_ms": 3000, "video_not_sent_ms": 1600,
    }  # fmt: skip


async def test_a_wav_longer_than_its_video_is_sent_whole() -> None:
    timeline = InputTimeline()
    source = MediaInput(BytesPcmSource(speech_pcm(1400), kind="wav"), FakeSampler(1000))
    await run(FakeTarget(), source, timeline=timeline)
    doc = timeline.to_dict()
    assert doc["appends"][-1]["media_end_ms"] == 1400
    assert "fitted_to_video" not in doc["audio_source"]


async def test_soundtrack_trim_with_tail_records_the_trim() -> None:
    target = FakeTarget()
    timeline = InputTimeline()
    pcm = BytesPcmSource(speech_pcm(3500), kind="video_soundtrack", path="clip.mp4")
    await run(target, MediaInput(pcm, FakeSampler(3500)), tail_silence_s=1.0, timeline=timeline)
    assert target.audio_end_ms == 4000
    doc = timeline.to_dict()
    assert [r["audio_end_ms"] for r in doc["appends"] if r["frames"]] == [1000, 2000, 3000, 4000]
    assert doc["soundtrack_policy"] == {
        "policy": "trim", "original_ms": 3500, "trimmed_ms": 500, "padded_ms": 0,
    }  # fmt: skip
    assert doc["audio_source"]["kind"] == "video_soundtrack"
    assert doc["totals"]["audio_ms"] == 4000


async def test_clip_without_audio_sends_vision_units_due_each_second() -> None:
    target = FakeTarget()
    timeline = InputTimeline()
    result = await run(
        target, MediaInput(None, FakeSampler(3000)), tail_silence_s=1.0, timeline=timeline
    )
    appends = target.appends
    assert [a.pcm for a in appends] == [b""] * 4
    assert all(len(a.frames) == 1 for a in appends)
    assert offsets(target, result.clock.t0) == [1000.0, 2000.0, 3000.0, 4000.0]
    assert target.audio_end_ms == 0
    rows = timeline.to_dict()["appends"]
    assert [r["unit_kind"] for r in rows] == ["VISION"] * 4
    assert [r["media_start_ms"] for r in rows] == [0, 1000, 2000, 3000]
    assert [r["frames"][0]["source_pts_ms"] for r in rows] == [0, 1000, 2000, 2000]
    assert [r["frames"][0]["held"] for r in rows] == [False, False, False, True]
    assert offsets(target, result.clock.t0, "commit") == [4000.0]


async def test_clip_without_audio_when_audio_is_required_is_fallback() -> None:
    target = FakeTarget(capabilities=caps("audio_required"))
    timeline = InputTimeline()
    await run(target, MediaInput(None, FakeSampler(3000)), tail_silence_s=1.0, timeline=timeline)
    doc = timeline.to_dict()
    assert len(doc["appends"]) == 20 and all(r["fallback"] for r in doc["appends"])
    assert [r["audio_end_ms"] for r in doc["appends"] if r["frames"]] == [1000, 2000, 3000, 4000]
    assert doc["totals"]["fallback_units"] == 4
    assert doc["unit_grid"]["input_unit_kinds"] == ["AUDIO", "OMNI"]
    assert check_timeline(doc) == []


# --- acceptance: pacing ---


@pytest.mark.parametrize("cost_ms", [0, 10, 350])
async def test_append_i_goes_out_at_max_of_schedule_and_cumulative_cost(cost_ms: int) -> None:
    target = FakeTarget(cost_s=cost_ms / 1000)
    result = await run(target, speech_pcm(3000))
    sent = offsets(target, result.clock.t0)
    assert len(sent) == 15
    # append i is due at its media end, 200 (i + 1) ms; sends queue behind earlier sends
    expected = [max(200 * (i + 1), 200 + i * cost_ms) for i in range(15)]
    assert sent == pytest.approx(expected, abs=1e-3)
    commit = offsets(target, result.clock.t0, "commit")[0]
    assert commit == pytest.approx(expected[-1] + cost_ms, abs=1e-3)  # right after the last


async def relative_sleep_stream(target: FakeTarget, pcm: bytes, chunk_ms: int = 200) -> None:
    """The approach we do not use: sleep one chunk after each send."""
    for append in Framer(FramerConfig(chunk_ms=chunk_ms)).plan(BytesPcmSource(pcm)):
        await target.append_input(append.pcm)
        await target.clock.sleep(chunk_ms / 1000)
    await target.commit()


async def test_send_cost_never_accumulates_where_relative_sleeps_drift() -> None:
    pcm = speech_pcm(60_000)
    ours = FakeTarget(cost_s=0.010)
    start = ours.clock.now()
    await run(ours, pcm)
    naive = FakeTarget(cost_s=0.010)
    await relative_sleep_stream(naive, pcm)
    ours_end = ours.sent[-1].at - start
    naive_end = naive.sent[-1].at - naive.sent[0].at
    assert len(ours.appends) == len(naive.appends) == 300
    # the last append is due at t0 + 60 s; the commit follows it after one send's cost
    assert ours_end == pytest.approx(60.01, abs=1e-3)
    assert naive_end == pytest.approx(300 * 0.210, abs=1e-3)  # 3 s of drift
    assert (ours.appends[-1].at - start) == pytest.approx(60.0, abs=1e-3)


async def test_a_late_send_does_not_shift_later_deadlines() -> None:
    clock = FakeClock()
    target = FakeTarget(clock)
    original = target.append_input
    calls = 0

    async def hiccup(*args: object, **kw: object) -> str:
        nonlocal calls
        calls += 1
        event_id = await original(*args, **kw)  # type: ignore[arg-type]
        if calls == 3:
            clock.t += 0.7
        return event_id

    target.append_input = hiccup  # type: ignore[method-assign]
    timeline = InputTimeline()
    result = await run(target, speech_pcm(1600), timeline=timeline)
    sent = offsets(target, result.clock.t0)
    assert sent == pytest.approx([200, 400, 600, 1300, 1300, 1300, 1400, 1600], abs=1e-3)
    late = [r["lateness_ms"] for r in timeline.to_dict()["appends"]]
    assert late == pytest.approx([0, 0, 0, 500, 300, 100, 0, 0], abs=1e-3)
    totals = timeline.totals()["lateness_ms"]
    assert totals["max"] == pytest.approx(500) and totals["p50"] == pytest.approx(0)


async def test_asap_sends_back_to_back_without_sleeping() -> None:
    target = FakeTarget(cost_s=0.001)
    timeline = InputTimeline()
    result = await run(target, speech_pcm(2000), realtime=False, timeline=timeline)
    assert target.clock.sleeps == []
    assert offsets(target, result.clock.t0) == pytest.approx([i * 1.0 for i in range(10)])
    doc = timeline.to_dict()
    assert doc["clock"]["pacing"] == "asap"
    assert all(r["scheduled_offset_ms"] is None for r in doc["appends"])
    assert doc["commits"][0]["scheduled_offset_ms"] is None
    assert doc["totals"]["lateness_ms"] is None


async def test_nothing_is_released_early_with_a_sleep_that_wakes_early() -> None:
    clock = FakeClock()

    async def early_sleep(seconds: float) -> None:
        clock.t += seconds * 0.5

    target = FakeTarget(clock)
    result = await run(target, speech_pcm(1000), sleep=early_sleep)
    sent = offsets(target, result.clock.t0)
    assert all(s >= 200 * (i + 1) - 1e-3 for i, s in enumerate(sent))


# --- continuation, commit and options ---


async def test_follow_up_stream_continues_clock_media_time_and_unit_numbering() -> None:
    target = FakeTarget()
    timeline = InputTimeline()
    first = await run(target, MediaInput(BytesPcmSource(speech_pcm(2000)), FakeSampler(2000)),
                      timeline=timeline, commit=False)  # fmt: skip
    assert first.commit_event_id is None and first.media_end_ms == 2000
    tail = await run(target, None, tail_silence_s=1.0, timeline=timeline,
                     position=first.position, clock=first.clock)  # fmt: skip
    assert tail.clock.t0 == first.clock.t0
    rows = timeline.to_dict()["appends"]
    assert [r["unit_index"] for r in rows if r["unit_kind"]] == [0, 1, 2]
    assert rows[-1]["segment"] == "tail" and rows[-1]["frames"][0]["held"]
    assert offsets(target, first.clock.t0)[-1] == 3000.0
    assert timeline.to_dict()["tail_silence_ms"] == 1000
    assert check_timeline(timeline.to_dict()) == []


async def test_commit_inside_a_unit_reanchors_the_next_stream() -> None:
    target = FakeTarget()
    timeline = InputTimeline()
    first = await run(target, speech_pcm(1400), timeline=timeline)
    assert first.position.unit_start_samples == first.position.audio_samples
    await run(
        target, speech_pcm(1000), timeline=timeline, position=first.position, clock=first.clock
    )
    rows = timeline.to_dict()["appends"]
    assert [(r["audio_end_ms"], r["unit_index"]) for r in rows if r["unit_kind"]] == [
        (1000, 0),
        (2400, 2),
    ]
    assert check_timeline(timeline.to_dict()) == []


async def test_explicit_media_origin_and_unit_index() -> None:
    target = FakeTarget()
    result = await run(target, speech_pcm(1000), media_origin_ms=5000, unit_index=9)
    assert target.appends[0].fields["media_start_ms"] == 5000
    assert target.appends[-1].fields["unit_index"] == 9
    assert offsets(target, result.clock.t0)[0] == 5200.0  # t0 is 5 s before the first sample


async def test_a_stream_continuing_nothing_starts_at_the_current_media_time() -> None:
    target = FakeTarget()
    first = await run(target, speech_pcm(1000))
    target.clock.t += 3.0
    await run(target, speech_pcm(400), clock=first.clock)
    assert target.appends[-2].fields["media_start_ms"] == 4000


async def test_position_that_disagrees_with_the_session_is_refused() -> None:
    target = FakeTarget()
    with pytest.raises(ValueError, match="continue from the result"):
        await run(target, speech_pcm(200), position=StreamPosition(audio_samples=16000))


async def test_realtime_flag_must_agree_with_a_given_clock() -> None:
    target = FakeTarget()
    with pytest.raises(ValueError):
        await run(target, speech_pcm(200), realtime=False, clock=MediaClock(now=target.clock.now))


async def test_commit_options_and_no_commit_without_appends() -> None:
    target = FakeTarget()
    await run(target, speech_pcm(400), response_create=True)
    assert target.sent[-1].fields == {"final": True, "create_response": True}
    empty = FakeTarget()
    result = await run(empty, b"")
    assert empty.sent == [] and result.commit_event_id is None


async def test_interrupted_stream_writes_a_partial_timeline(tmp_path: Path) -> None:
    target = FakeTarget()
    original = target.append_input

    async def failing(*args: object, **kw: object) -> str:
        if len(target.sent) == 3:
            raise ConnectionError("dropped")
        return await original(*args, **kw)  # type: ignore[arg-type]

    target.append_input = failing  # type: ignore[method-assign]
    timeline = InputTimeline(path=tmp_path / "input_timeline.json")
    with pytest.raises(ConnectionError):
        await run(target, speech_pcm(2000), timeline=timeline)
    doc = json.loads((tmp_path / "input_timeline.json").read_text())
    assert len(doc["appends"]) == 3 and doc["commits"] == []


async def test_timeline_is_written_when_the_stream_ends(tmp_path: Path) -> None:
    target = FakeTarget()
    timeline = InputTimeline(path=tmp_path)
    await run(target, speech_pcm(1000), timeline=timeline)
    doc = json.loads((tmp_path / "input_timeline.json").read_text())
    assert len(doc["appends"]) == 5 and len(doc["commits"]) == 1


class ListeningTarget(FakeTarget):
    """A fake client that also offers `add_listener`, as the real one does."""

    def __init__(self) -> None:
        super().__init__()
        self.listeners: list[Callable[[ServerEvent, float], None]] = []

    def add_listener(self, listener: Callable[[ServerEvent, float], None]) -> None:
        self.listeners.append(listener)


async def test_timeline_listens_to_a_client_for_acknowledgements() -> None:
    target = ListeningTarget()
    timeline = InputTimeline()
    result = await run(target, speech_pcm(1000), timeline=timeline)
    await run(
        target, speech_pcm(1000), timeline=timeline, position=result.position, clock=result.clock
    )
    assert len(target.listeners) == 1
    ack = InputAudioBufferCommitted.from_raw(
        {"type": "input_audio_buffer.committed", "client_event_id": result.commit_event_id,
         "audio_end_ms": 1000, "no_response": True}
    )  # fmt: skip
    target.listeners[0](ack, result.clock.t0 + 1.0315)
    commit = timeline.to_dict()["commits"][0]
    assert commit["acknowledged"] == {
        "received_offset_ms": 1031.5,
        "audio_end_ms": 1000,
        "no_response": True,
    }


async def test_accepts_any_source_with_audio_and_frames_attributes() -> None:
    class Clip:
        def __init__(self) -> None:
            self.audio = BytesPcmSource(speech_pcm(1000), kind="video_soundtrack")
            self.frames = FakeSampler(1000)

    target = FakeTarget()
    await run(target, Clip())
    assert [len(a.frames) for a in target.appends] == [0, 0, 0, 0, 1]
    with pytest.raises(ValueError, match="frames given twice"):
        await run(FakeTarget(), Clip(), frames=FakeSampler(1000))
