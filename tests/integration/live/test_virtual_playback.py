"""The ack task over the listener model (a file run's `VirtualPlayer`): it wakes when an ack
falls due, not every 50 ms, and the acks are what the listener heard by then."""

from __future__ import annotations

import asyncio
import time

from duplex_client import DuplexClient, presets
from duplex_client.analysis.virtual_player import VirtualPlayer
from duplex_client.framing.clock import MediaClock
from duplex_client.run.playback import PlaybackSync
from tests.integration.live.helpers import wait_for
from tests.integration.live.test_playback_and_interruption import RATE, acks, respond
from tests.support.scripted_server import ScriptedServer


async def test_progress_acks_come_as_they_fall_due_with_a_wakeup_each() -> None:
    async with ScriptedServer() as server:
        client = DuplexClient(
            server.url, model="m", config=presets.minicpmo_4_5(), ack_policy="manual"
        )
        await client.connect()
        clock = MediaClock("realtime")
        clock.start()
        player = VirtualPlayer(clock, sample_rate_hz=RATE)
        sync = PlaybackSync(client, player, clock=clock.now)
        sync.attach()
        ticks = 0
        tick = sync.tick

        async def counted() -> None:
            nonlocal ticks
            ticks += 1
            await tick()

        sync.tick = counted  # type: ignore[method-assign]
        task = asyncio.create_task(sync.run())
        try:
            started = time.monotonic()
            await respond(server.peer, "resp_1", 1000, chunks=4)
            await wait_for(
                lambda: any(a["played_ms"] == 1000 for a in acks(server.peer, "resp_1")),
                timeout=10,
                what="the drain ack",
            )
            took = time.monotonic() - started
            sent = acks(server.peer, "resp_1")
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            await client.close()
        played = [a["played_ms"] for a in sent]
        # every 250 ms of progress, then the drain: each at or past its due position
        assert played[-1] == 1000 and not sent[-1].get("truncate")
        assert len(played) == 4 and all(
            p >= due for p, due in zip(played, (250, 500, 750, 1000), strict=True)
        )
        # one tick per ack (a loaded machine may add a woken-early tick or two); ticking
        # every 50 ms made about 20 over the second of audio (`took` bounds them)
        assert ticks <= 8 < took / 0.05
