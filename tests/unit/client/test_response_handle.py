"""`ResponseHandle`: the pure response state plus one audio consumer at a time (no socket)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from duplex_client.client.responses import ResponseHandle
from duplex_client.protocol import b64encode, parse_server_event
from duplex_client.protocol.session import ResponseState, ResponseTracker

CHUNK = b"\x01\x00" * 240  # 10 ms at 24 kHz


def ev(etype: str, **fields: Any) -> Any:
    return parse_server_event({"type": etype, **fields})


def audio(rid: str) -> Any:
    return ev("response.output_audio.delta", response_id=rid, delta=b64encode(CHUNK))


def tracker() -> ResponseTracker[ResponseHandle]:
    t = ResponseTracker(lambda h: None, new_response=ResponseHandle, clock=lambda: 0.0)
    t.feed(ev("response.created", response={"id": "r1"}))
    return t


def test_the_tracker_makes_handles_that_are_response_states() -> None:
    handle = tracker().handles["r1"]
    assert isinstance(handle, ResponseHandle) and isinstance(handle, ResponseState)


async def test_a_second_audio_consumer_is_refused_while_the_first_is_open() -> None:
    t = tracker()
    handle = t.handles["r1"]
    first = handle.audio()
    t.feed(audio("r1"))
    assert await anext(first) == CHUNK
    with pytest.raises(RuntimeError, match="already has a consumer"):
        handle.audio()
    # reading what was kept is not consuming
    t.feed(audio("r1"))
    assert handle.audio_bytes() == CHUNK * 2 and handle.audio_since(len(CHUNK)) == CHUNK
    t.feed(ev("response.done", response={"id": "r1", "status": "completed"}))
    assert [c async for c in first] == [CHUNK]
    assert [c async for c in handle.audio()] == []  # the first ended: a new stream may start


async def test_two_concurrent_tasks_cannot_split_the_audio() -> None:
    t = tracker()
    handle = t.handles["r1"]

    async def consume() -> list[bytes]:
        return [c async for c in handle.audio()]

    reader = asyncio.create_task(consume())
    await asyncio.sleep(0)  # the reader is waiting for the first chunk
    with pytest.raises(RuntimeError):
        await consume()
    t.feed(audio("r1"))
    t.feed(ev("response.done", response={"id": "r1", "status": "completed"}))
    assert await reader == [CHUNK]


async def test_a_consumer_that_stops_early_hands_the_rest_to_the_next() -> None:
    t = tracker()
    handle = t.handles["r1"]
    for _ in range(3):
        t.feed(audio("r1"))
    async for _chunk in handle.audio():
        break  # the abandoned stream is dropped: no consumer any more
    stream = handle.audio()
    assert await anext(stream) == CHUNK
    await stream.aclose()  # closing explicitly frees it as well
    t.feed(ev("response.done", response={"id": "r1", "status": "completed"}))
    assert [c async for c in handle.audio()] == [CHUNK]


async def test_fencing_ends_the_stream_and_done_wakes_waiters() -> None:
    t = tracker()
    handle = t.handles["r1"]
    t.feed(audio("r1"))
    t.fence("r1")
    assert handle.fenced and [c async for c in handle.audio()] == [CHUNK]
    assert not handle.done
    waiting = asyncio.create_task(handle.wait(5))
    t.feed(ev("response.done", response={"id": "r1", "status": "cancelled"}))
    assert await waiting is handle and handle.done and handle.status == "cancelled"


def _reachable_types(handle: ResponseHandle) -> set[str]:
    import gc

    return {type(o).__name__ for o in gc.get_referents(*gc.get_referents(handle))}


async def test_a_listen_nobody_reads_or_awaits_holds_no_queue_or_event() -> None:
    t = ResponseTracker(lambda h: None, new_response=ResponseHandle, clock=lambda: 0.0)
    t.feed(ev("response.listen"))  # a unit the model listened through
    (handle,) = t.listens
    assert handle.done and handle.decision == "listen"
    # one is kept per unit for the record: each queue and event is more for the collector
    assert not {"DropOldestQueue", "Event", "deque"} & _reachable_types(handle)
    assert await asyncio.wait_for(handle.wait(), 1) is handle
    assert [c async for c in handle.audio()] == []  # ended: the stream ends at once


async def test_audio_read_after_the_end_has_every_chunk_and_a_late_waiter_returns() -> None:
    t = tracker()
    handle = t.handles["r1"]
    waiter = asyncio.create_task(handle.wait())
    await asyncio.sleep(0)
    t.feed(audio("r1"))
    t.feed(audio("r1"))
    t.feed(ev("response.done", response={"id": "r1", "status": "completed"}))
    assert await asyncio.wait_for(waiter, 1) is handle
    assert [c async for c in handle.audio()] == [CHUNK, CHUNK]
    assert await asyncio.wait_for(handle.wait(timeout=0), 1) is handle


async def test_audio_of_a_fenced_response_read_later_ends_after_what_came() -> None:
    t = tracker()
    handle = t.handles["r1"]
    t.feed(audio("r1"))
    t.fence("r1")
    t.feed(audio("r1"))  # refused: fenced
    assert [c async for c in handle.audio()] == [CHUNK]
    fresh = tracker()
    fresh.fence("r1")  # fenced before any audio: the stream started later ends at once
    assert [c async for c in fresh.handles["r1"].audio()] == []
