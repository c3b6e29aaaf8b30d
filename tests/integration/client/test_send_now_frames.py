"""`WebSocketTransport.send_now` writes the frame `send` writes, on a real loopback socket."""

from __future__ import annotations

import asyncio

import pytest
from websockets.asyncio.server import ServerConnection, serve

from duplex_client.client.transport import TransportClosed, WebSocketTransport


async def test_send_now_writes_the_text_frame_send_writes() -> None:
    received: list[str | bytes] = []
    done = asyncio.Event()

    async def handler(ws: ServerConnection) -> None:
        async for message in ws:
            received.append(message)
            if len(received) == 4:
                done.set()

    payloads = [b'{"type":"input_audio_buffer.append","audio":"AAAA"}', "é €".encode()]
    async with serve(handler, "127.0.0.1", 0) as server:
        port = server.sockets[0].getsockname()[1]
        transport = await WebSocketTransport.connect(f"ws://127.0.0.1:{port}")
        assert transport.writes_at_once
        for data in payloads:
            assert transport.send_now(data)
            await transport.send(data)
        await asyncio.wait_for(done.wait(), 10)
        await transport.close()
        # closed: `send_now` declines and `send` reports it, as before
        assert not transport.send_now(payloads[0])
        with pytest.raises(TransportClosed):
            await transport.send(payloads[0])
    # text frames (str), each the same as the one `send` wrote
    assert received == [p.decode() for p in payloads for _ in range(2)]
