"""The end of a turn is woken by events (never polled); live figures come from running state."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from duplex_client.bundle.writer import RunBundle
from duplex_client.framing import InputTimeline, SendTiming
from duplex_client.framing.pcm_format import DEFAULT_PCM
from duplex_client.framing.plan import PlannedAppend
from duplex_client.protocol import Capabilities, UnitKind, b64encode, parse_server_event
from duplex_client.protocol.session import ResponseTracker, SessionConfig
from duplex_client.run.options import RunFailed, RunOptions
from duplex_client.run.prepare import prepare
from duplex_client.run.progress import RunProgress
from duplex_client.run.result import session_handles
from duplex_client.run.session_run import SessionRun
from duplex_client.run.sources.files import FileSource
from duplex_client.run.watch import LiveFigures, SessionActivity, settle_turn, turn_wait_s

#: Loop turns given to a waiter to react: far less than any timer (a 50 ms poll never fires).
TURNS = 20


class Clock:
    """A clock that moves only when told."""

    def __init__(self, t: float = 100.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def ev(etype: str, **fields: Any) -> Any:
    return parse_server_event({"type": etype, **fields})


class FakeClient:
    """What a run reads of its client: a real tracker fed real events, open until `end()`."""

    def __init__(self, clock: Clock | None = None) -> None:
        self.clock = clock or time.monotonic
        self.tracker = ResponseTracker(lambda h: None, clock=self.clock)
        self.capabilities = Capabilities()
        self.input_pcm_format = DEFAULT_PCM
        self.config = SessionConfig()
        self.audio_samples = 0
        self.listeners: list[Any] = []
        self.created = 0
        self._closed = asyncio.Event()

    @property
    def is_open(self) -> bool:
        return not self._closed.is_set()

    async def wait_closed(self, timeout: float | None = None) -> str:
        await self._closed.wait()
        return "closed"

    async def wait_committed(self, event_id: str, timeout: float | None = None) -> Any:
        return ev("input_audio_buffer.committed", client_event_id=event_id)

    async def create_response(self) -> None:
        self.created += 1

    def emit(self, event: Any) -> None:
        """As the reader task does: the tracker first, then every listener."""
        self.tracker.feed(event)
        for listener in self.listeners:
            listener(event, self.clock())

    def end(self) -> None:
        self.tracker.close("disconnect")
        self._closed.set()


async def turns_until_done(task: asyncio.Task[Any], turns: int = TURNS) -> bool:
    """Give the loop `turns` turns (no time passes); whether `task` finished in them."""
    for _ in range(turns):
        if task.done():
            return True
        await asyncio.sleep(0)
    return task.done()


def speak(rid: str) -> Any:
    return ev("response.output_audio.delta", response_id=rid, delta=b64encode(b"\x01\x00" * 240))


# --- the wait, as numbers ---


def wait_s(now: float, **kw: Any) -> float | None:
    args = {"busy": False, "decided": True, "due": True, "last_event_at": 0.0,
            "settle_s": 0.5, "deadline": 30.0, "timeout_s": 30.0} | kw  # fmt: skip
    return turn_wait_s(now, **args)


def test_over_once_quiet_for_the_settle_time_after_the_decision() -> None:
    assert wait_s(0.2) == pytest.approx(0.3)  # decided: wait out the rest of the quiet time
    assert wait_s(0.5) is None and wait_s(7.0) is None
    assert wait_s(0.2, decided=False, due=False) == pytest.approx(0.3)  # nothing was due
    assert wait_s(29.9, last_event_at=29.8) == pytest.approx(0.1)  # the deadline comes first


def test_a_running_response_or_a_missing_decision_waits_for_the_deadline() -> None:
    assert wait_s(1.0, busy=True) == pytest.approx(29.0)
    assert wait_s(1.0, decided=False) == pytest.approx(29.0)
    with pytest.raises(RunFailed, match=r"^a response did not finish within 30 s after"):
        wait_s(30.0, busy=True)
    with pytest.raises(RunFailed, match=r"^no decision arrived within 30 s after the commit"):
        wait_s(31.0, decided=False)
    assert wait_s(31.0, last_event_at=1.0) is None  # over beats late


# --- the wait, woken by events ---


async def test_settling_happens_at_the_event_that_ends_the_response() -> None:
    clock = Clock()
    client = FakeClient(clock)
    activity = SessionActivity(clock)
    client.listeners.append(activity.on_event)
    client.emit(ev("response.created", response_id="r1"))
    task = asyncio.create_task(
        settle_turn(client, activity, since=clock.t, due=True, settle_s=0.0,  # type: ignore[arg-type]
                    deadline=clock.t + 30, timeout_s=30, clock=clock)
    )  # fmt: skip
    assert not await turns_until_done(task)
    client.emit(speak("r1"))  # decided, still running
    assert not await turns_until_done(task)
    client.emit(ev("response.done", response={"id": "r1", "status": "completed"}))
    assert await turns_until_done(task)  # no clock moved, no timer fired: the event did it
    assert task.result() is True


async def test_the_session_ending_ends_the_wait_at_once() -> None:
    clock = Clock()
    client = FakeClient(clock)
    activity = SessionActivity(clock)
    client.emit(ev("response.created", response_id="r1"))
    task = asyncio.create_task(
        settle_turn(client, activity, since=clock.t, due=True, settle_s=0.0,  # type: ignore[arg-type]
                    deadline=clock.t + 30, timeout_s=30, clock=clock)
    )  # fmt: skip
    assert not await turns_until_done(task)
    client.end()  # no event reaches the listeners: the closed session wakes the waiter
    assert await turns_until_done(task) and task.result() is False


async def test_past_the_deadline_the_next_wake_up_fails_the_run() -> None:
    clock = Clock()
    client = FakeClient(clock)
    activity = SessionActivity(clock)
    client.listeners.append(activity.on_event)
    client.emit(ev("response.created", response_id="r1"))
    task = asyncio.create_task(
        settle_turn(client, activity, since=clock.t, due=True, settle_s=0.0,  # type: ignore[arg-type]
                    deadline=clock.t + 10, timeout_s=10, clock=clock)
    )  # fmt: skip
    assert not await turns_until_done(task)
    clock.t += 10
    client.emit(speak("r1"))
    assert await turns_until_done(task)
    with pytest.raises(RunFailed, match="a response did not finish within 10 s"):
        task.result()


async def test_a_decision_from_before_the_commit_does_not_count() -> None:
    clock = Clock()
    client = FakeClient(clock)
    activity = SessionActivity(clock)
    client.listeners.append(activity.on_event)
    client.emit(ev("response.listen", response_id=None))  # standalone, before the commit
    clock.t += 1
    since = clock.t
    task = asyncio.create_task(
        settle_turn(client, activity, since=since, due=True, settle_s=0.0,  # type: ignore[arg-type]
                    deadline=since + 30, timeout_s=30, clock=clock)
    )  # fmt: skip
    assert not await turns_until_done(task)
    client.emit(ev("response.listen", response_id=None))
    assert await turns_until_done(task) and task.result() is True


class FakeListening:
    def __init__(self) -> None:
        self.drained: list[float] = []

    async def drain(self, timeout_s: float) -> bool:
        self.drained.append(timeout_s)
        return True


def session_run(tmp_path: Path, **options: Any) -> tuple[SessionRun, FakeClient, FakeListening]:
    opts = RunOptions(**options)
    run = SessionRun("ws://127.0.0.1:9/v1/realtime", opts, prepare(opts), FileSource(),
                     RunBundle(tmp_path / "run"), None)  # fmt: skip
    client, listening = FakeClient(), FakeListening()
    client.listeners.append(run.activity.on_event)
    run.client, run.listening = client, listening  # type: ignore[assignment]
    return run, client, listening


async def test_finish_turn_returns_as_soon_as_the_answer_is_done(tmp_path: Path) -> None:
    run, client, listening = session_run(tmp_path, settle_s=0.0, timeout_s=30.0)
    sr = SimpleNamespace(commit_event_id="c1", commit_sent_at=time.monotonic())
    client.emit(ev("response.created", response_id="r1"))
    task = asyncio.create_task(run._finish_turn(sr))  # type: ignore[arg-type]
    assert not await turns_until_done(task)
    client.emit(speak("r1"))
    assert not await turns_until_done(task)
    assert listening.drained == []
    client.emit(ev("response.done", response={"id": "r1", "status": "completed"}))
    assert await turns_until_done(task)
    task.result()
    assert len(listening.drained) == 1 and 29.0 < listening.drained[0] <= 30.0


async def test_finish_turn_does_not_drain_a_session_that_ended(tmp_path: Path) -> None:
    run, client, listening = session_run(tmp_path, settle_s=0.0, manual_commit=True)
    sr = SimpleNamespace(commit_event_id="c1", commit_sent_at=time.monotonic())
    task = asyncio.create_task(run._finish_turn(sr))  # type: ignore[arg-type]
    assert not await turns_until_done(task)  # manual commit: a decision is due
    assert client.created == 1
    client.end()
    assert await turns_until_done(task)
    task.result()
    assert listening.drained == []


def test_a_run_nobody_watches_keeps_no_live_figures(tmp_path: Path) -> None:
    run, _, _ = session_run(tmp_path)
    assert run.progress.figures is False
    assert RunProgress().figures is True  # a caller's own progress is kept up to date


# --- live figures ---


def planned(i: int, kind: UnitKind | None) -> PlannedAppend:
    return PlannedAppend(
        segment="clip", pcm=b"\x01\x00" * 160, audio_start_samples=160 * i,
        audio_end_samples=160 * (i + 1), duration_ms=10, audio_end_ms=10 * (i + 1),
        is_speech=None, frames=None, unit_kind=kind, unit_index=i if kind else None,
        media_start_ms=10 * i, media_end_ms=10 * (i + 1),
    )  # fmt: skip


KIND_NAMES = ("AUDIO", "OMNI", "VISION")


def recomputed(timeline: InputTimeline, client: FakeClient) -> dict[str, Any]:
    """What the run's refresh computed before: every row re-read and re-sorted."""
    rows = timeline.appends
    late = sorted(r["lateness_ms"] for r in rows if r["lateness_ms"] is not None)
    handles = session_handles(client)  # type: ignore[arg-type]
    return {
        "appends": len(rows),
        "media_ms": rows[-1]["media_end_ms"] if rows else 0,
        "units": {k: sum(1 for r in rows if r["unit_kind"] == k) for k in KIND_NAMES},
        "lateness": (late[len(late) // 2], late[-1]) if late else (None, None),
        "decisions": [(h.metadata.get("unit_index"), h.decision or "?") for h in handles],
        "transcript": " ".join(h.transcript or h.text for h in handles if h.transcript or h.text),
    }  # fmt: skip


KINDS = st.sampled_from((None, UnitKind.AUDIO, UnitKind.OMNI, UnitKind.VISION))
LATE = st.none() | st.floats(0.0, 2000.0)
STEP = st.one_of(
    st.tuples(st.just("append"), KINDS, LATE),
    st.tuples(st.just("late"), st.integers(0, 500), st.floats(0.0, 5000.0)),
    st.tuples(st.just("answer"), st.integers(0, 9), st.text("ab ", max_size=5)),
    st.just(("refresh",)),
)


@settings(max_examples=60, deadline=None)
@given(steps=st.lists(STEP, max_size=60))
def test_live_figures_equal_a_full_recomputation(steps: list[tuple[Any, ...]]) -> None:
    timeline, client = InputTimeline(), FakeClient(Clock())
    activity = SessionActivity(client.clock)
    client.listeners.append(activity.on_event)
    progress = RunProgress()
    figures = LiveFigures(progress, timeline, client, activity)  # type: ignore[arg-type]
    for n, step in enumerate(steps):
        if step[0] == "append":
            i, (_, kind, late) = len(timeline.appends), step
            scheduled = None if late is None else 10.0 * i
            sent = 10.0 * i + (late or 0.0)
            timeline.add_append(planned(i, kind), f"e{i}", SendTiming(scheduled, sent, late))
        elif step[0] == "late" and timeline.appends:
            timeline.set_sent_offset(f"e{step[1] % len(timeline.appends)}", step[2])
        elif step[0] == "answer":
            rid = f"r{n}"
            client.emit(ev("response.created", response_id=rid, metadata={"unit_index": step[1]}))
            client.emit(
                ev("response.output_audio_transcript.delta", response_id=rid, delta=step[2])
            )
        figures.refresh(float(n))
        want = recomputed(timeline, client)
        assert progress.wall_s == float(n)
        assert progress.appends == want["appends"] and progress.media_ms == want["media_ms"]
        assert progress.units == want["units"]
        if want["lateness"] != (None, None):
            assert (progress.lateness_p50_ms, progress.lateness_max_ms) == want["lateness"]
        assert progress.decisions == want["decisions"]
        assert progress.transcript == want["transcript"]


def test_responses_are_read_again_only_after_an_event_or_the_end() -> None:
    timeline, client = InputTimeline(), FakeClient(Clock())
    activity = SessionActivity(client.clock)
    client.listeners.append(activity.on_event)
    progress = RunProgress()
    figures = LiveFigures(progress, timeline, client, activity)  # type: ignore[arg-type]
    client.emit(ev("response.created", response_id="r1"))
    figures.refresh(0.0)
    assert progress.decisions == [(None, "?")]
    client.tracker.handles["r1"].transcript = "unseen"  # no event: nothing to read again
    figures.refresh(0.1)
    assert progress.transcript == ""
    client.emit(speak("r1"))
    figures.refresh(0.2)
    assert progress.decisions == [(None, "speak")] and progress.transcript == "unseen"
    client.emit(ev("response.created", response_id="r2"))
    figures.refresh(0.3)
    assert progress.decisions == [(None, "speak"), (None, "?")]
    client.end()  # the session's end decides what is open, without an event
    figures.refresh(0.4)
    assert progress.decisions == [(None, "speak"), (None, "listen")]
