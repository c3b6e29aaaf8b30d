"""Concurrent calls on one client: appends keep call order, consumers share responses fairly."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from duplex_client import DuplexClient, DuplexSessionClosedError
from duplex_client.client.transport import Transport
from tests.support.scripted_server import Peer, ScriptedServer

PCM_200MS = b"\x01\x00" * 3200  # 200 ms at 16 kHz


class SlowSocket:
    """A real WebSocket transport whose appends stay in flight until `drain` is set."""

    def __init__(self, inner: Transport, drain: asyncio.Event) -> None:
        self._inner = inner
        self._drain = drain
        self.appends_in_flight = asyncio.Event()

    async def send(self, data: bytes) -> None:
        """Hold an append back (a full socket buffer), then send it."""
        if b'"input_audio_buffer.append"' in data:
            self.appends_in_flight.set()
            await self._drain.wait()
        await self._inner.send(data)

    async def recv(self) -> str | bytes:
        """The inner transport's next frame."""
        return await self._inner.recv()

    async def close(self) -> None:
        """Close the inner transport."""
        await self._inner.close()


class SlowSocketClient(DuplexClient):
    """`DuplexClient` over a `SlowSocket`."""

    def __init__(self, url: str, **options: Any) -> None:
        super().__init__(url, **options)
        self.drain = asyncio.Event()
        self.sockets: list[SlowSocket] = []

    async def _open_transport(self) -> Transport:
        socket = SlowSocket(await super()._open_transport(), self.drain)
        self.sockets.append(socket)
        return socket


async def _answer_commits(peer: Peer, event: dict[str, Any]) -> None:
    await peer.send({"type": "input_audio_buffer.committed", "client_event_id": event["event_id"]})
    rid = f"resp_{len(peer.of_type('input_audio_buffer.commit'))}"
    await peer.send({"type": "response.created", "response": {"id": rid}})
    await peer.send({"type": "response.done", "response": {"id": rid, "status": "completed"}})


@pytest.mark.parametrize("reconnect", [True, False])
async def test_concurrent_appends_under_back_pressure_go_out_in_call_order(
    reconnect: bool,
) -> None:
    """Each append read the running total before the previous one counted: all said 200."""
    async with (
        ScriptedServer() as server,
        SlowSocketClient(server.url, model="m", reconnect=reconnect) as client,
    ):
        server.on("input_audio_buffer.commit", _answer_commits)
        calls = [client.append_input(PCM_200MS) for _ in range(4)]
        sent = [asyncio.create_task(call) for call in (*calls, client.commit())]
        await client.sockets[0].appends_in_flight.wait()
        client.drain.set()
        ids = await asyncio.wait_for(asyncio.gather(*sent), 5)
        assert client.audio_end_ms == 800
        await client.wait_committed(ids[-1], timeout=5)
        received = [m for m in server.peer.received if m["type"].startswith("input_audio")]
        assert [m["event_id"] for m in received] == ids  # wire order is call order
        appends = received[:4]
        assert [a["audio_end_ms"] for a in appends] == [200, 400, 600, 800]
        assert [a["audio_start_ms"] for a in appends] == [0, 200, 400, 600]


async def test_two_tasks_waiting_on_responses_each_get_one() -> None:
    async with ScriptedServer() as server, DuplexClient(server.url, model="m") as client:
        server.on("input_audio_buffer.commit", _answer_commits)
        waiting = [asyncio.create_task(anext(client.responses())) for _ in range(2)]
        for _ in range(2):
            await client.append_input(PCM_200MS)
            await client.wait_committed(await client.commit(), timeout=5)
        handles = await asyncio.wait_for(asyncio.gather(*waiting), 5)
        assert sorted(h.response_id or "" for h in handles) == ["resp_1", "resp_2"]


async def test_an_append_refused_after_the_end_is_not_counted() -> None:
    async with ScriptedServer() as server, DuplexClient(server.url, model="m") as client:
        await client.append_input(PCM_200MS)
        await server.peer.send({"type": "session.expired", "reason": "idle_ttl_expired"})
        await client.wait_closed(5)
        with pytest.raises(DuplexSessionClosedError):
            await client.append_input(PCM_200MS)
        assert client.audio_end_ms == 200
