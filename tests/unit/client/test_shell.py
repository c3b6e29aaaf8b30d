"""The asyncio shell over `ClientConnection`, on an in-memory transport (no socket, no sleep)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from duplex_client import DuplexClientBase, LocalProtocolError
from duplex_client.client.transport import TransportClosed
from duplex_client.protocol.errors import DuplexSessionClosedError
from duplex_client.protocol.session import State

CAPS = {"supports_playback_ack": True, "required_input_modalities": []}


class MemoryTransport:
    """Frames the test pushes come out of `recv`; `session.close` is answered at once."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []
        self.closed = False
        self._inbox: asyncio.Queue[str | None] = asyncio.Queue()

    def push(self, event: dict[str, Any]) -> None:
        self._inbox.put_nowait(json.dumps(event))

    async def send(self, data: bytes) -> None:
        if self.closed:
            raise TransportClosed(1006)
        event = json.loads(data)
        self.sent.append(event)
        if event["type"] == "session.update":
            session = {"id": "duplex-1", "capabilities": CAPS}
            self.push({"type": "session.created", "resume_token": "rt", "session": session})
        elif event["type"] == "session.close":
            self.push({"type": "session.closed", "reason": "client_close"})

    async def recv(self) -> str | bytes:
        frame = await self._inbox.get()
        if frame is None:
            raise TransportClosed(1000)
        return frame

    async def close(self) -> None:
        self.closed = True
        self._inbox.put_nowait(None)

    def types(self) -> list[str]:
        return [e["type"] for e in self.sent]


async def test_a_second_open_is_refused_and_the_session_lives_on() -> None:
    client = DuplexClientBase(model="m", heartbeat_interval_s=None)
    first = MemoryTransport()
    await client.open(first)
    assert client.connection.state is State.OPEN and client.is_open and client.connected
    second = MemoryTransport()
    with pytest.raises(LocalProtocolError, match="state OPEN"):
        await client.open(second)
    assert second.closed and client.is_open
    await client.append_input(b"\x00\x00" * 160)
    await client.close()
    assert first.types() == ["session.update", "input_audio_buffer.append", "session.close"]
    assert client.closed_reason == "client_close" and client.connection.state is State.CLOSED


async def test_sends_before_open_are_a_local_protocol_error_and_count_nothing() -> None:
    client = DuplexClientBase(model="m")
    with pytest.raises(LocalProtocolError, match="CONNECTING"):
        await client.append_input(b"\x00\x00" * 160)
    assert client.audio_end_ms == 0 and not client.is_open
    await client.close()  # never opened: nothing to do


async def test_events_are_delivered_acked_and_the_end_stops_everything() -> None:
    client = DuplexClientBase(model="m", heartbeat_interval_s=None)
    transport = MemoryTransport()
    seen: list[str] = []
    client.add_listener(lambda event, _at: seen.append(event.type))
    await client.open(transport)
    subscription = client.events()
    responses = client.responses()
    transport.push({"type": "rate_limits.updated", "server_event_seq": 1})
    transport.push({"type": "rate_limits.updated", "server_event_seq": 1})  # a replay
    transport.push({"type": "session.expired", "reason": "idle_ttl_expired", "server_event_seq": 2})
    assert await client.wait_closed(5) == "idle_ttl_expired"
    assert seen == ["session.created", "rate_limits.updated", "session.expired"]
    assert [e.type async for e in subscription] == ["rate_limits.updated", "session.expired"]
    assert [h async for h in responses] == []
    with pytest.raises(DuplexSessionClosedError):
        await client.commit()
    with pytest.raises(DuplexSessionClosedError):
        await client.wait_committed("evt_never", timeout=5)
    await client.close()
    acks = [e["server_event_seq"] for e in transport.sent if e["type"] == "session.event_ack"]
    assert acks == []  # the ack was due once the buffered frames were in: the session had ended
    assert "session.close" not in transport.types()  # nothing is sent after a terminal event


async def test_a_wait_for_a_commit_ends_with_its_acknowledgement_or_error() -> None:
    client = DuplexClientBase(model="m", heartbeat_interval_s=None)
    transport = MemoryTransport()
    await client.open(transport)
    commit = await client.commit()
    waiting = asyncio.ensure_future(client.wait_committed(commit, timeout=5))
    transport.push({"type": "input_audio_buffer.committed", "client_event_id": commit})
    assert (await waiting).client_event_id == commit
    assert (await client.wait_committed(commit, timeout=5)).client_event_id == commit  # kept
    await client.close()
