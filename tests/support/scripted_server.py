"""A scripted WebSocket peer for client tests (a test double, not the reference server).

It answers the handshake, `session.close` and heartbeats, records every message it received
with its request path and headers, and lets a test push arbitrary server events or react to
client events through `on(type, handler)`.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from websockets.asyncio.server import Server, ServerConnection, serve

DEFAULT_CAPS: dict[str, Any] = {
    "implementation_level": "model_native_duplex",
    "chunk_period_ms": 1000,
    "first_unit_ms": 1000,
    "required_input_modalities": [],
    "optional_input_modalities": ["audio", "video"],
    "input_unit_kinds": ["AUDIO", "VISION", "OMNI"],
    "max_frames_per_append": 2,
    "supports_session_resume": True,
    "supports_barge_in": True,
    "supports_playback_ack": True,
}

Handler = Callable[["Peer", dict[str, Any]], Awaitable[None]]


@dataclass
class Peer:
    """One accepted connection: what it received and how to answer."""

    conn: ServerConnection
    path: str
    headers: dict[str, str]
    received: list[dict[str, Any]] = field(default_factory=list)
    arrivals: list[float] = field(default_factory=list)
    seq: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    sequenced: bool = True

    async def send(self, event: dict[str, Any], *, seq: bool | None = None) -> dict[str, Any]:
        """Send an event, stamping an id and (by default) the next `server_event_seq`."""
        out = {"event_id": f"event_{next(_ids):032x}", **event}
        if (self.sequenced if seq is None else seq) and "server_event_seq" not in out:
            out["server_event_seq"] = next(self.seq)
        await self.conn.send(json.dumps(out))
        return out

    def of_type(self, etype: str) -> list[dict[str, Any]]:
        """Received client events of one type."""
        return [m for m in self.received if m.get("type") == etype]


_ids = itertools.count(1)


class ScriptedServer:
    """Async context manager: a WebSocket server on 127.0.0.1, port 0."""

    def __init__(
        self,
        *,
        capabilities: dict[str, Any] | None = None,
        created_extra: dict[str, Any] | None = None,
        answer_close: bool = True,
        handshake_error: dict[str, Any] | None = None,
        no_capabilities: bool = False,
        created_delay_s: float = 0.0,
    ) -> None:
        self.capabilities = dict(DEFAULT_CAPS if capabilities is None else capabilities)
        self.created_extra = created_extra or {}
        self.answer_close = answer_close
        self.handshake_error = handshake_error
        self.no_capabilities = no_capabilities
        self.created_delay_s = created_delay_s
        self.peers: list[Peer] = []
        self.handlers: dict[str, Handler] = {}
        self.connected = asyncio.Event()
        self._server: Server | None = None

    def on(self, etype: str, handler: Handler) -> None:
        """React to a client event type (after it is recorded)."""
        self.handlers[etype] = handler

    @property
    def url(self) -> str:
        """`ws://127.0.0.1:<port>` (no path: the client adds `/v1/realtime`)."""
        assert self._server is not None
        port = self._server.sockets[0].getsockname()[1]
        return f"ws://127.0.0.1:{port}"

    @property
    def peer(self) -> Peer:
        """The most recent connection."""
        return self.peers[-1]

    async def __aenter__(self) -> ScriptedServer:
        self._server = await serve(
            self._handle, "127.0.0.1", 0, compression=None, max_size=2**26, ping_interval=None
        )
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()

    async def _handle(self, conn: ServerConnection) -> None:
        request = conn.request
        assert request is not None
        peer = Peer(conn, request.path, {k.lower(): v for k, v in request.headers.raw_items()})
        self.peers.append(peer)
        self.connected.set()
        try:
            async for message in conn:
                event = json.loads(message)
                peer.received.append(event)
                peer.arrivals.append(time.monotonic())
                await self._react(peer, event)
        except Exception:  # a closed socket ends the peer quietly
            return

    async def _react(self, peer: Peer, event: dict[str, Any]) -> None:
        etype = event.get("type")
        if etype == "session.update" and len(peer.received) == 1:
            await self._handshake(peer, event)
        elif etype == "session.heartbeat":
            await peer.send(
                {"type": "session.heartbeat_ack", "session_id": "duplex-test"}, seq=False
            )
        elif etype == "session.close" and self.answer_close:
            await peer.send(
                {"type": "session.closed", "session_id": "duplex-test", "reason": "client_close"}
            )
            await peer.conn.close(1000)
            return
        handler = self.handlers.get(str(etype))
        if handler is not None:
            await handler(peer, event)

    async def _handshake(self, peer: Peer, event: dict[str, Any]) -> None:
        if self.handshake_error is not None:
            await peer.send({"type": "error", "error": self.handshake_error}, seq=False)
            await peer.conn.close(1008)
            return
        if self.created_delay_s:
            await asyncio.sleep(self.created_delay_s)
        session = {
            **event["session"],
            "object": "realtime.session",
            "id": "duplex-" + "ab" * 16,
            "state": "open",
            "epoch": 0,
        }
        if not self.no_capabilities:
            session["capabilities"] = self.capabilities
        created = {
            "type": "session.created",
            "session": session,
            "resume_token": "rt_secret",
            "attachment_generation": 1,
            **self.created_extra,
        }
        await peer.send(created, seq=False)
        await peer.send({"type": "session.updated", "session": session})
