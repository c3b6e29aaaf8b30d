"""Bounded queues drop their oldest items and never block the producer."""

from __future__ import annotations

import asyncio

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
