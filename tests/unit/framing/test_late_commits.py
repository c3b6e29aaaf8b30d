"""Server commits heard late: the client's grid must rejoin the server's (protocol.md §4.2).

The server side is the reference server's own `UnitAssembler`; the client is the live framer.
A commit is made by the server after some append and heard by the client a few appends
later. Appends planned while a commit is unheard may disagree with the server (nothing can
be done about them); every other append must close exactly the unit the server closes with
it, with the same `unit_index` and the same frames.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import given, settings
from hypothesis import strategies as st

from duplex_client.client.server_commits import ServerCommitFollower
from duplex_client.framing import (
    BytesPcmSource,
    FrameGroup,
    Framer,
    FramerConfig,
    InputTimeline,
    PlannedAppend,
    SendTiming,
    check_timeline,
    ms_to_samples,
)
from duplex_client.framing.clock import MediaClock
from duplex_client.framing.live import LiveFramer
from duplex_client.protocol import parse_server_event
from duplex_client.server.assembler import FramePack, UnitAssembler
from tests.unit.framing.fakes import FakeSampler, caps, speech_pcm
from tests.unit.live.test_live_framer import Feed


def pack(group: FrameGroup | None) -> FramePack | None:
    if group is None:
        return None
    tags = tuple(repr(i.pts_ms) for i in group.images)
    return FramePack(tags, tags)


@dataclass
class Wire:
    """The client framer and the server assembler, with server commits in flight between them.

    The client side is the SDK's own `ServerCommitFollower`, as `stream` and `live` use it.
    """

    framer: LiveFramer | Framer
    server: UnitAssembler
    commit_after: dict[int, int]  # append count → appends until the client hears of it
    timeline: InputTimeline = field(default_factory=InputTimeline)
    rows: list[tuple[PlannedAppend, int | None, tuple[str, ...] | None, bool]] = field(
        default_factory=list
    )
    unheard: list[tuple[int, int]] = field(default_factory=list)  # (audio_end_ms, heard at)
    sent: int = 0

    def __post_init__(self) -> None:
        self.follower = ServerCommitFollower(self.framer, self.timeline, MediaClock("asap"))

    def send(self, planned: list[PlannedAppend]) -> None:
        """Send appends planned together, hearing due commits before each (as the SDK does)."""
        self.follower.expect(planned)
        for _ in planned:
            self.hear()
            self._deliver(self.follower.take(), in_flight=bool(self.unheard))

    def _deliver(self, a: PlannedAppend, *, in_flight: bool) -> None:
        if a.pcm:
            units = self.server.add_audio(a.pcm, False, pack(a.frames))
        else:
            frames = pack(a.frames)
            assert frames is not None
            units = [self.server.add_vision(frames)]
        last = units[-1] if units else None
        frames_of_unit = last.frames.frames if last and last.frames else None
        self.rows.append((a, last.unit_index if last else None, frames_of_unit, in_flight))
        self.timeline.add_append(a, f"evt_{self.sent}", SendTiming(None, 0.0, None))
        self.sent += 1
        delay = self.commit_after.get(self.sent)
        if delay is not None and a.pcm:
            self.server.flush()
            self.unheard.append((self.server.audio_end_ms, self.sent + delay))

    def hear(self, *, all_now: bool = False) -> None:
        while self.unheard and (all_now or self.unheard[0][1] <= self.sent):
            end_ms, _ = self.unheard.pop(0)
            event = parse_server_event(
                {"type": "input_audio_buffer.committed", "client_event_id": None,
                 "audio_end_ms": end_ms}
            )  # fmt: skip
            self.follower(event, 0.0)

    def check(self) -> None:
        """Every append sent with no commit unheard agrees with the server, frames included."""
        for a, server_index, server_frames, in_flight in self.rows:
            if in_flight:
                continue
            assert a.unit_index == server_index, (a, server_index)
            if a.frames is not None:
                assert pack(a.frames).frames == server_frames  # type: ignore[union-attr]
        assert check_timeline(self.timeline.to_dict(), check_totals=False) == []


@settings(max_examples=300, deadline=None)
@given(
    # whole-ms blocks, as devices deliver: the server reports commit positions in whole ms,
    # so appends shorter than 1 ms could not be told apart
    steps=st.lists(st.tuples(st.integers(1, 750), st.booleans()), min_size=1, max_size=40),
    commits=st.dictionaries(st.integers(1, 60), st.integers(0, 12), max_size=5),
    chunk_ms=st.sampled_from([100, 200, 250, 1000]),
    first_ms=st.sampled_from([1000, 2000, 500]),
    profile=st.sampled_from(["minicpmo", "audio_required"]),
)
def test_the_client_grid_rejoins_the_server_after_late_commits(
    steps: list[tuple[int, bool]],
    commits: dict[int, int],
    chunk_ms: int,
    first_ms: int,
    profile: str,
) -> None:
    config = FramerConfig.from_capabilities(caps(profile, first=first_ms), chunk_ms=chunk_ms)
    framer = LiveFramer(config)
    framer.set_camera(Feed())
    wire = Wire(framer, UnitAssembler(config.grid, 2), commits)
    for ms, upload in steps:
        wire.send(framer.push(speech_pcm(ms), upload=upload))
    wire.hear(all_now=True)
    wire.send(framer.push(speech_pcm(3000), upload=True))  # planned after every commit
    wire.check()


@settings(max_examples=150, deadline=None)
@given(
    clip_ms=st.integers(200, 6000),
    tail_ms=st.sampled_from([0, 700, 2000]),
    commits=st.dictionaries(st.integers(1, 40), st.integers(0, 6), max_size=3),
    chunk_ms=st.sampled_from([100, 200, 1000]),
)
def test_a_planned_stream_follows_server_commits_between_appends(
    clip_ms: int, tail_ms: int, commits: dict[int, int], chunk_ms: int
) -> None:
    config = FramerConfig.from_capabilities(caps(), chunk_ms=chunk_ms)
    framer = Framer(config)
    wire = Wire(framer, UnitAssembler(config.grid, 2), commits)
    plan = framer.plan(
        BytesPcmSource(speech_pcm(clip_ms)), FakeSampler(clip_ms, fps=5), tail_silence_ms=tail_ms
    )
    for planned in plan:  # the stream loop: planned ahead, it hears events while it waits
        wire.send([planned])
    wire.check()


def test_a_commit_heard_after_the_client_closed_its_unit() -> None:
    """The CI failure: sealed at 5600 ms inside [5400, 6400), heard after the 6400 close."""
    config = FramerConfig.from_capabilities(caps())
    framer = LiveFramer(config)
    framer.set_camera(Feed())
    framer.push(speech_pcm(400), upload=True)
    assert framer.committed(ms_to_samples(400)) == 1  # heard at once: the grid is 400 + k·1000
    rows = framer.push(speech_pcm(5800), upload=True)  # to 6200: closes at 1400 … 5400
    rows += framer.push(speech_pcm(300), upload=True)  # the server sealed at 5600 meanwhile
    closing = [(r.unit_index, r.audio_end_ms) for r in rows if r.closes_unit]
    assert closing[-2:] == [(5, 5400), (6, 6400)]
    # residual 6 ends at 5600 and [5600, 6600) is 7, still open: the next index stays 7
    assert framer.committed(ms_to_samples(5600)) == 0
    after = framer.push(speech_pcm(2000), upload=True)
    closing = [(r.unit_index, r.audio_end_ms) for r in after if r.closes_unit]
    assert closing == [(7, 6600), (8, 7600)]
    assert framer.position.unit_start_samples == ms_to_samples(7600)


def test_a_commit_on_a_boundary_or_beyond_memory_changes_nothing() -> None:
    framer = LiveFramer(FramerConfig.from_capabilities(caps()))
    framer.push(speech_pcm(2500), upload=True)
    before = framer.position
    assert framer.committed(ms_to_samples(2000)) == 0  # the end of an append that closed unit 1
    assert framer.committed(ms_to_samples(2000) + 7) == 0  # the server's rounded ms: the same
    assert framer.position == before
