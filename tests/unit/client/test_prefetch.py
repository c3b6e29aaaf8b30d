"""`PlanPrefetcher`: planning in a worker thread, bounded, never racing a server commit."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from dataclasses import replace
from typing import Any

import pytest

from duplex_client.client.prefetch import BATCH_BUDGET_S, PlanPrefetcher
from duplex_client.client.server_commits import ServerCommitFollower
from duplex_client.framing import FramerConfig, PlannedAppend
from duplex_client.framing.clock import MediaClock
from duplex_client.protocol import parse_server_event


def planned(i: int) -> PlannedAppend:
    return PlannedAppend(
        segment="clip",
        pcm=b"\0\0" * 3200,
        audio_start_samples=i * 3200,
        audio_end_samples=(i + 1) * 3200,
        duration_ms=200,
        audio_end_ms=(i + 1) * 200,
        is_speech=None,
        frames=None,
        unit_kind=None,
        unit_index=None,
        media_start_ms=i * 200,
        media_end_ms=(i + 1) * 200,
    )


class Framer:
    """Records which thread touches it, and fails if two touch it at once."""

    config = FramerConfig()

    def __init__(self) -> None:
        self.inside = threading.Lock()
        self.threads: set[int] = set()
        self.commits: list[int] = []
        self.relabelled = 0
        self.gate = threading.Event()
        self.gate.set()

    def touch(self) -> None:
        assert self.inside.acquire(blocking=False), "framer touched by two threads at once"
        self.inside.release()

    def plan(self, n: int) -> Iterator[PlannedAppend]:
        for i in range(n):
            with self.inside:
                self.threads.add(threading.get_ident())
                self.gate.wait(5)
            yield planned(i)

    def committed(self, audio_end_samples: int) -> int:
        self.touch()
        self.commits.append(audio_end_samples)
        return 0

    def relabel(self, append: PlannedAppend) -> PlannedAppend:
        self.touch()
        self.relabelled += 1
        return replace(append, unit_index=99)


def commit_event(audio_end_ms: int) -> object:
    return parse_server_event(
        {
            "type": "input_audio_buffer.committed",
            "event_id": "e1",
            "item_id": "i1",
            "audio_end_ms": audio_end_ms,
        }
    )


async def test_plans_in_a_worker_thread_and_bounded() -> None:
    framer = Framer()
    follower = ServerCommitFollower(framer, None, MediaClock("asap"))
    prefetch = PlanPrefetcher(framer.plan(20), follower, depth=3)
    assert await prefetch.next_start() == 0
    await asyncio.sleep(0.05)
    assert follower.expected == 3  # never more than `depth` waiting
    got = []
    while (start := await prefetch.next_start()) is not None:
        got.append((start, (await prefetch.take()).media_start_ms))
    await prefetch.aclose()
    assert got == [(i * 200, i * 200) for i in range(20)]
    assert threading.get_ident() not in framer.threads


async def test_a_commit_heard_during_planning_waits_and_relabels_before_take() -> None:
    framer = Framer()
    follower = ServerCommitFollower(framer, None, MediaClock("asap"))
    prefetch = PlanPrefetcher(framer.plan(3), follower, depth=2)
    assert await prefetch.next_start() == 0
    await asyncio.sleep(0.05)
    framer.gate.clear()  # the worker now sits inside the plan (the third append)
    first = await prefetch.take()
    await asyncio.sleep(0.05)
    follower(commit_event(300), 0.0)  # type: ignore[arg-type]
    assert framer.commits == []  # held back: the worker owns the framer
    take = asyncio.ensure_future(prefetch.take())
    await asyncio.sleep(0.05)
    assert not take.done()  # the next append waits for the held-back commit
    framer.gate.set()
    second = await take
    assert framer.commits == [4800] and second.unit_index == 99 and first.unit_index is None
    assert await prefetch.next_start() == 400
    await prefetch.aclose()


async def test_inline_plans_on_the_loop_thread_one_at_a_time() -> None:
    framer = Framer()
    follower = ServerCommitFollower(framer, None, MediaClock("asap"))
    prefetch = PlanPrefetcher(framer.plan(2), follower, inline=True)
    assert await prefetch.next_start() == 0 and follower.expected == 1
    await prefetch.take()
    assert await prefetch.next_start() == 200
    await prefetch.take()
    assert await prefetch.next_start() is None
    assert framer.threads == {threading.get_ident()}


async def test_a_failing_plan_raises_in_the_sender() -> None:
    def plan() -> Iterator[PlannedAppend]:
        yield planned(0)
        raise RuntimeError("bad frame")

    follower = ServerCommitFollower(Framer(), None, MediaClock("asap"))
    prefetch = PlanPrefetcher(plan(), follower)
    assert await prefetch.next_start() == 0
    await prefetch.take()
    with pytest.raises(RuntimeError, match="bad frame"):
        await prefetch.next_start()
    await prefetch.aclose()


async def test_the_plan_runs_in_the_callers_context() -> None:
    import contextvars

    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")
    seen: list[str] = []

    def plan() -> Iterator[PlannedAppend]:
        seen.append(var.get())  # e.g. a run's media-warning sink
        yield planned(0)

    var.set("run")
    follower = ServerCommitFollower(Framer(), None, MediaClock("asap"))
    prefetch = PlanPrefetcher(plan(), follower)
    assert await prefetch.next_start() == 0
    await prefetch.take()
    assert await prefetch.next_start() is None
    await prefetch.aclose()
    assert seen == ["run"]


class CountingPool(ThreadPoolExecutor):
    """A pool that counts the trips made to it and how many appends each one planned."""

    def __init__(self) -> None:
        super().__init__(max_workers=1)
        self.trips = 0
        self.sizes: list[int] = []

    def submit(self, fn, /, *args, **kwargs):  # type: ignore[no-untyped-def]
        self.trips += 1
        future = super().submit(fn, *args, **kwargs)
        future.add_done_callback(lambda f: self.sizes.append(len(f.result() or [])))
        return future


async def drain(prefetch: PlanPrefetcher) -> list[int]:
    got = []
    while await prefetch.next_start() is not None:
        got.append((await prefetch.take()).media_start_ms)
    await prefetch.aclose()
    return got


async def test_cheap_appends_are_planned_several_per_trip_and_still_bounded() -> None:
    pool = CountingPool()
    follower = ServerCommitFollower(Framer(), None, MediaClock("asap"))
    prefetch = PlanPrefetcher(Framer().plan(40), follower, depth=8, executor=pool)
    assert await prefetch.next_start() == 0
    await asyncio.sleep(0.05)
    assert follower.expected == 8  # never more than `depth` waiting
    assert await drain(prefetch) == [i * 200 for i in range(40)]
    assert pool.trips <= 20  # one trip for 8, then one per 4 taken (not 40); slack for load
    pool.shutdown()


def slow(n: int) -> Iterator[PlannedAppend]:
    for i in range(n):
        time.sleep(BATCH_BUDGET_S * 3)  # a decode
        yield planned(i)


async def test_with_nothing_waiting_a_slow_step_ends_the_trip() -> None:
    pool = CountingPool()
    follower = ServerCommitFollower(Framer(), None, MediaClock("asap"))
    prefetch = PlanPrefetcher(slow(6), follower, depth=8, executor=pool)
    assert await drain(prefetch) == [i * 200 for i in range(6)]
    assert pool.sizes[0] == 1  # the first append went out without waiting for the second
    pool.shutdown()


async def test_with_media_waiting_a_trip_plans_several_slow_steps() -> None:
    """Once appends wait for the sender, a trip may take a share of the media they span, so
    filling the queue takes fewer trips (hand-overs) than appends."""
    pool = CountingPool()
    follower = ServerCommitFollower(Framer(), None, MediaClock("asap"))
    prefetch = PlanPrefetcher(slow(12), follower, depth=12, executor=pool)
    assert await prefetch.next_start() == 0
    for _ in range(100):
        if follower.expected == 12:
            break
        await asyncio.sleep(0.02)
    assert follower.expected == 12 and pool.sizes[0] == 1
    assert pool.trips < 12 and max(pool.sizes) > 1
    assert await drain(prefetch) == [i * 200 for i in range(12)]
    pool.shutdown()


async def test_a_commit_heard_ends_a_long_trip_after_its_step() -> None:
    """The sender waits for a commit heard while planning, so the trip stops at once."""
    loop = asyncio.get_running_loop()
    framer = Framer()
    follower = ServerCommitFollower(framer, None, MediaClock("asap"))

    def plan(n: int, heard_at: int) -> Iterator[PlannedAppend]:
        for i in range(n):
            if i == heard_at:  # the server's commit arrives while this step plans
                loop.call_soon_threadsafe(follower, commit_event(300), 0.0)
                for _ in range(1000):
                    if follower.deferred:
                        break
                    time.sleep(0.001)
            yield planned(i)

    pool = CountingPool()
    prefetch = PlanPrefetcher(plan(16, heard_at=8), follower, depth=8, executor=pool)
    assert await prefetch.next_start() == 0
    for _ in range(100):
        if follower.expected == 8:
            break
        await asyncio.sleep(0.02)
    trips = len(pool.sizes)
    for _ in range(4):
        await prefetch.take()  # the refill starts with 800 ms of media waiting: a long budget
    for _ in range(100):
        if len(pool.sizes) > trips:
            break
        await asyncio.sleep(0.01)
    assert pool.sizes[trips] == 1  # not the 4 there was room for
    assert framer.commits == [4800]
    assert await drain(prefetch) == [i * 200 for i in range(4, 16)]
    pool.shutdown()


class HeldExecutor(Executor):
    """Runs each call in a thread, then holds its result until `release` is set."""

    def __init__(self) -> None:
        self.ran = threading.Event()
        self.release = threading.Event()

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()

        def work() -> None:
            result = fn(*args, **kwargs)
            self.ran.set()
            self.release.wait(5)
            future.set_result(result)

        threading.Thread(target=work, daemon=True).start()
        return future


async def test_the_plan_s_end_never_overtakes_the_appends_planned_before_it() -> None:
    """The worker plans the last appends and meets the plan's end in one trip: a sender
    asking meanwhile waits for those appends (it used to be told the stream was over)."""
    framer = Framer()
    follower = ServerCommitFollower(framer, None, MediaClock("asap"))
    executor = HeldExecutor()
    prefetch = PlanPrefetcher(framer.plan(2), follower, executor=executor)
    first = asyncio.ensure_future(prefetch.next_start())  # starts the planning
    assert await asyncio.to_thread(executor.ran.wait, 5)  # both planned, the end met
    asking = asyncio.ensure_future(prefetch.next_start())
    await asyncio.sleep(0.05)
    assert not asking.done()  # not None: the two appends are still on their way
    executor.release.set()
    assert await first == 0 and await asking == 0
    assert [(await prefetch.take()).media_start_ms for _ in range(2)] == [0, 200]
    assert await prefetch.next_start() is None
    await prefetch.aclose()


def test_the_follower_says_how_much_media_waits() -> None:
    follower = ServerCommitFollower(Framer(), None, MediaClock("asap"))
    assert follower.waiting_ms == 0
    follower.expect([planned(3), planned(4), planned(5)])
    assert follower.waiting_ms == 600
    follower.take()
    assert follower.waiting_ms == 400
