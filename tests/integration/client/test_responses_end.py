"""`responses()` ends: with the session, after `idle_s` without a new decision, or `until`."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from duplex_client import DuplexClient
from duplex_client.server import ReferenceServer

TONE = b"\x00\x10" * 16000  # 1 s of loud PCM16 (speech to the scripted engine)


async def test_the_readme_loop_ends_after_the_last_answer() -> None:
    async with (
        ReferenceServer(engine="scripted") as server,
        DuplexClient(server.url, model="m") as client,
    ):
        await client.append_input(TONE, is_speech=True)
        await client.wait_committed(await client.commit(), timeout=10)
        spoken = []

        async def loop() -> None:
            async for response in client.responses(idle_s=1.0):
                if response.decision == "speak":
                    _ = [pcm async for pcm in response.audio()]
                    await response.wait(10)
                    spoken.append(response.transcript)

        await asyncio.wait_for(loop(), 15)  # used to wait forever
        assert spoken and spoken[0]


async def test_until_and_session_end_stop_the_iteration() -> None:
    async with ReferenceServer(engine="scripted") as server:
        client = DuplexClient(server.url, model="m")
        await client.connect()
        stop = asyncio.Event()
        ended = asyncio.create_task(_drain(client.responses(stop.wait())))
        await asyncio.sleep(0.05)
        stop.set()
        assert await asyncio.wait_for(ended, 5) == 0
        plain = asyncio.create_task(_drain(client.responses()))
        await asyncio.sleep(0.05)
        await client.close()
        await asyncio.wait_for(plain, 5)  # ends when the session closes


async def _drain(iterator: AsyncIterator[Any]) -> int:
    return len([r async for r in iterator])
