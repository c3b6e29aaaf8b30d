"""`Pacer`: every stream's deadline waits on one loop timer, ended as `asyncio.sleep` ends them."""

from __future__ import annotations

import asyncio
import gc
import weakref

from duplex_client.client import pacer as pacer_module
from duplex_client.client.pacer import Pacer, loop_pacer

#: How late a wait may end: a loaded 2-core CI machine runs the loop late by tens of ms.
LATE_BOUND_S = 0.5


async def test_waits_end_in_deadline_order_never_early() -> None:
    pacer, loop = Pacer(), asyncio.get_running_loop()
    ended: list[tuple[float, float]] = []

    async def wait(delay: float) -> None:
        due = loop.time() + delay
        await pacer.sleep(delay)
        ended.append((due, loop.time()))

    # added latest first: each earlier deadline supersedes the pacer's timer
    await asyncio.gather(*(wait(d) for d in (0.09, 0.05, 0.07, 0.01, 0.03)))
    dues = [due for due, _ in ended]
    assert dues == sorted(dues)
    for due, at in ended:
        assert due <= at < due + LATE_BOUND_S


async def test_one_loop_timer_serves_waits_added_later() -> None:
    pacer, loop = Pacer(), asyncio.get_running_loop()
    calls = 0
    call_at = loop.call_at

    def counting(when: float, callback: object, *args: object) -> asyncio.TimerHandle:
        nonlocal calls
        calls += 1
        return call_at(when, callback, *args)  # type: ignore[arg-type]

    loop.call_at = counting  # type: ignore[method-assign]
    try:
        # 20 waits added in deadline order: one timer is set for the first, then one per
        # firing, never one per wait added behind it
        waits = [pacer.sleep(0.02 + i * 0.002) for i in range(20)]
        assert calls == 1
        await asyncio.gather(*waits)
    finally:
        loop.call_at = call_at  # type: ignore[method-assign]
    assert 1 < calls <= 21


async def test_a_cancelled_wait_leaves_the_others_on_time() -> None:
    pacer, loop = Pacer(), asyncio.get_running_loop()
    started = loop.time()  # before the waits: each is due at least 40 ms after this
    first = asyncio.ensure_future(pacer.sleep(0.02))
    second = asyncio.create_task(asyncio.wait_for(pacer.sleep(0.04), 5))
    first.cancel()
    await second
    assert first.cancelled()
    assert 0.04 <= loop.time() - started < 0.04 + LATE_BOUND_S


async def test_sleep_zero_ends_on_the_next_timer_pass() -> None:
    pacer = Pacer()
    await asyncio.wait_for(pacer.sleep(0), 5)
    await asyncio.wait_for(pacer.sleep(-1), 5)


def test_the_registry_keeps_no_closed_loop_alive() -> None:
    loop = asyncio.new_event_loop()

    async def use() -> Pacer:
        pacer = loop_pacer()
        assert loop_pacer() is pacer  # one per loop
        pacer.sleep(60)  # still pending when the loop closes: its future holds the loop
        return pacer

    pacer = loop.run_until_complete(use())
    assert pacer_module._pacers.get(loop) is pacer
    loop.close()
    ref = weakref.ref(loop)
    del loop, pacer

    async def another_loops_first_stream() -> None:
        loop_pacer()

    asyncio.run(another_loops_first_stream())
    gc.collect()
    assert ref() is None
