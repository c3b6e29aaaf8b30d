"""Bounded queues drop their oldest items and never block the producer."""

from __future__ import annotations

import asyncio

import pytest

from duplex_client.client.queues import Broadcaster, DropOldestQueue


async def test_drop_oldest_keeps_newest_items_in_order() -> None:
    q: DropOldestQueue[int] = DropOldestQueue(3)
    for i in range(10):
        q.put(i)
    assert q.dropped == 7 and len(q) == 3
    q.close()
    assert [i async for i in q] == [7, 8, 9]


async def test_get_waits_for_put_and_close_ends_iteration() -> None:
    q: DropOldestQueue[str] = DropOldestQueue(4)

    async def producer() -> None:
        await asyncio.sleep(0.01)
        q.put("a")
        q.close()
        q.put("ignored")

    task = asyncio.create_task(producer())
    assert [x async for x in q] == ["a"]
    await task


async def test_broadcaster_slow_subscriber_loses_only_its_oldest() -> None:
    b: Broadcaster[int] = Broadcaster(2)
    fast, slow = b.subscribe(), b.subscribe()
    got_fast = []
    for i in range(5):
        b.publish(i)
        got_fast.append(await fast.get())
    b.close()
    assert got_fast == [0, 1, 2, 3, 4]
    assert [i async for i in slow] == [3, 4] and slow.dropped == 3
    late = b.subscribe()
    assert [i async for i in late] == []


async def test_closed_subscription_is_removed() -> None:
    b: Broadcaster[int] = Broadcaster(2)
    sub = b.subscribe()
    sub.close()
    b.publish(1)
    assert len(sub) == 0


async def test_two_consumers_waiting_at_once_are_both_served() -> None:
    """A second waiter used to replace the first, which then waited forever."""
    q: DropOldestQueue[int] = DropOldestQueue()
    first, second = asyncio.create_task(q.get()), asyncio.create_task(q.get())
    await asyncio.sleep(0)
    q.put(1)
    q.put(2)
    got = await asyncio.wait_for(asyncio.gather(first, second), 1)
    assert sorted(got) == [1, 2]
    waiting = [asyncio.create_task(q.get()) for _ in range(3)]
    await asyncio.sleep(0)
    q.close()
    ended = await asyncio.wait_for(asyncio.gather(*waiting, return_exceptions=True), 1)
    assert all(isinstance(e, StopAsyncIteration) for e in ended)


async def test_until_ends_when_idle_and_leaves_the_rest_queued() -> None:
    q: DropOldestQueue[int] = DropOldestQueue()
    q.put(1)
    q.put(2)
    started = asyncio.get_running_loop().time()
    assert [i async for i in q.until(idle_s=0.05)] == [1, 2]
    assert asyncio.get_running_loop().time() - started < 1
    stop = asyncio.Event()
    got: list[int] = []

    async def consume() -> None:
        async for item in q.until(stop.wait()):
            got.append(item)

    task = asyncio.create_task(consume())
    q.put(3)
    await asyncio.sleep(0.01)
    stop.set()
    await asyncio.wait_for(task, 1)
    q.put(4)  # after the end: stays for the next consumer
    assert got == [3] and await q.get() == 4
    q.close()
    assert [i async for i in q.until(asyncio.sleep(10))] == []  # ends with the queue
    with pytest.raises(ValueError):
        await anext(aiter(q.until(idle_s=0)))


async def _settle() -> None:
    """Let every task that is ready run until it blocks (scheduling only, no timing)."""
    for _ in range(5):
        await asyncio.sleep(0)


async def test_waiters_are_served_in_arrival_order_and_a_cancelled_one_takes_nothing() -> None:
    q: DropOldestQueue[int] = DropOldestQueue()
    a, b, c = (asyncio.create_task(q.get()) for _ in range(3))
    await _settle()
    q.put(1)
    q.put(2)
    q.put(3)
    assert await asyncio.wait_for(asyncio.gather(a, b, c), 1) == [1, 2, 3]
    first, second = asyncio.create_task(q.get()), asyncio.create_task(q.get())
    await _settle()
    q.put(4)
    first.cancel()  # woken for 4 but cancelled before it could run: 4 goes to the next one
    assert await asyncio.wait_for(second, 1) == 4
    assert first.cancelled() and len(q) == 0


async def test_a_cancelled_until_consumer_leaves_the_item_queued() -> None:
    """`until()` waited in a task of its own that outlived a cancelled consumer."""
    q: DropOldestQueue[int] = DropOldestQueue()

    async def consume() -> list[int]:
        return [i async for i in q.until(idle_s=30)]

    waiting = asyncio.create_task(consume())
    await _settle()
    waiting.cancel()
    await asyncio.gather(waiting, return_exceptions=True)
    q.put(1)
    assert await asyncio.wait_for(q.get(), 1) == 1  # the orphaned wait used to take it

    woken = asyncio.create_task(consume())
    await _settle()
    q.put(2)
    woken.cancel()  # its wait finished, but it never yielded 2
    await asyncio.gather(woken, return_exceptions=True)
    assert woken.cancelled() and q.get_nowait() == 2
