"""Appends written without awaiting (`Link.write_now`) keep the order of every write."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from duplex_client import DuplexClientBase

CAPS = {"required_input_modalities": []}


class SocketLike:
    """A transport with a synchronous write that a full buffer refuses, as websockets' does."""

    writes_at_once = True

    def __init__(self) -> None:
        self.sent: list[tuple[str, dict[str, Any]]] = []
        self.full = False
        self.drained = asyncio.Event()
        self._inbox: asyncio.Queue[str] = asyncio.Queue()

    def send_now(self, data: bytes) -> bool:
        if self.full:
            return False
        self.sent.append(("now", json.loads(data)))
        return True

    async def send(self, data: bytes) -> None:
        event = json.loads(data)
        if event["type"] == "session.update":
            session = {"id": "duplex-1", "capabilities": CAPS}
            created = {"type": "session.created", "resume_token": "rt", "session": session}
            self._inbox.put_nowait(json.dumps(created))
        elif event["type"] == "session.close":
            self._inbox.put_nowait(json.dumps({"type": "session.closed", "reason": "client_close"}))
        if self.full:
            await self.drained.wait()
            self.full = False
        self.sent.append(("send", event))

    async def recv(self) -> str | bytes:
        return await self._inbox.get()

    async def close(self) -> None:
        pass


def appends(transport: SocketLike) -> list[tuple[str, int]]:
    return [(how, e["audio_end_ms"]) for how, e in transport.sent if e["type"].endswith(".append")]


async def opened(resumable: bool) -> tuple[DuplexClientBase, SocketLike]:
    """A session on a `SocketLike`; `resumable`: its appends are kept for resending."""
    client = DuplexClientBase(model="m", heartbeat_interval_s=None, reconnect=resumable)
    transport = SocketLike()

    async def never() -> SocketLike:
        raise AssertionError("no reconnect here")

    await client.open(transport, reconnect_with=never if resumable else None)
    assert client.connection.resumable is resumable
    return client, transport


@pytest.mark.parametrize("resumable", [True, False])
async def test_appends_go_out_at_once_while_nothing_waits_to_write(resumable: bool) -> None:
    client, transport = await opened(resumable)
    for _ in range(3):
        await client.append_input(b"\x00\x00" * 1600)
    assert appends(transport) == [("now", 100), ("now", 200), ("now", 300)]
    if resumable:  # the record of inputs says when each was written
        written = [client.input_ledger.written_at(e["event_id"]) for _, e in transport.sent[1:]]
        assert all(at is not None for at in written)
    await client.close()


@pytest.mark.parametrize("resumable", [True, False])
async def test_a_full_buffer_queues_the_appends_after_it_in_order(resumable: bool) -> None:
    client, transport = await opened(resumable)
    await client.append_input(b"\x00\x00" * 1600)
    transport.full = True  # the next write waits for the buffer to drain
    blocked = asyncio.create_task(client.append_input(b"\x00\x00" * 1600))
    await asyncio.sleep(0)
    transport.full = False  # room again, but the blocked write is first in line
    behind = asyncio.create_task(client.append_input(b"\x00\x00" * 1600))
    await asyncio.sleep(0)
    assert appends(transport) == [("now", 100)]
    transport.full = True
    transport.drained.set()
    await asyncio.gather(blocked, behind)
    assert appends(transport) == [("now", 100), ("send", 200), ("send", 300)]
    await client.append_input(b"\x00\x00" * 1600)  # nothing waits any more
    assert appends(transport)[-1] == ("now", 400)
    await client.close()
