"""`DuplexClient.stream` continues the media timeline and unit numbering across calls."""

from __future__ import annotations

import asyncio

from duplex_client import DuplexClient
from tests.support.scripted_server import ScriptedServer


async def test_second_stream_continues_first_one() -> None:
    async with ScriptedServer() as server, DuplexClient(server.url, model="m") as client:
        speech = b"\x10\x00" * (16000 * 14 // 10)  # 1.4 s
        first = await client.stream(speech, realtime=False, commit=False)
        second = await client.stream(None, tail_silence_s=1.0, realtime=False)
        assert first.appends == 7 and second.appends == 5
        assert second.clock is first.clock
        peer = server.peer

        async def all_sent() -> None:
            while len(peer.of_type("input_audio_buffer.commit")) < 1:
                await asyncio.sleep(0.01)

        await asyncio.wait_for(all_sent(), 5)
        appends = peer.of_type("input_audio_buffer.append")
        assert [a["media_start_ms"] for a in appends] == list(range(0, 2400, 200))
        assert [a["audio_end_ms"] for a in appends] == list(range(200, 2600, 200))
        closing = [(a["audio_end_ms"], a["unit_index"]) for a in appends if "unit_index" in a]
        assert closing == [(1000, 0), (2000, 1)]
        assert [a.get("is_speech") for a in appends[7:]] == [False] * 5
